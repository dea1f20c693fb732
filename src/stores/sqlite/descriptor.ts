/**
 * sqlite:PATH — the embedded store: one SQLite file shared by the processes of one host.
 * `sqlite:./x.db` and `sqlite:x.db` are relative to the working directory, `sqlite:/abs.db` and
 * `sqlite:///abs.db` absolute, `sqlite:~/x.db` under $HOME. The store takes no URL options: a
 * `?` starts them, so any option given is refused rather than ignored (or taken as part of the
 * file name).
 */
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { InvalidConfigError } from '../../core/errors.js';
import type { StoreDescriptor } from '../../core/store-descriptor.js';
import { checkQueryOptions } from '../kit/url.js';

/** defaultStorePath is `${XDG_STATE_HOME:-$HOME/.local/state}/baton/baton.db`. */
export function defaultStorePath(env: NodeJS.ProcessEnv = process.env): string {
  const state = env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : join(env.HOME || homedir(), '.local', 'state');
  return join(state, 'baton', 'baton.db');
}

/** sqlitePath returns the absolute file path a `sqlite:` URL names (or `:memory:`). */
export function sqlitePath(text: string, env: NodeJS.ProcessEnv = process.env): string {
  let path = text.trim().replace(/^sqlite:/i, '');
  if (path.startsWith('//')) path = path.slice(2);
  if (path === '') throw new InvalidConfigError('sqlite: needs a file path, e.g. sqlite:/var/lib/baton/baton.db');
  if (path.includes('\0')) throw new InvalidConfigError('sqlite: the path contains a NUL byte');
  const q = path.indexOf('?');
  if (q >= 0) {
    checkQueryOptions('sqlite', new URLSearchParams(path.slice(q + 1)), []);
    path = path.slice(0, q);
    if (path === '') throw new InvalidConfigError('sqlite: needs a file path, e.g. sqlite:/var/lib/baton/baton.db');
  }
  if (path === ':memory:') return path;
  if (path === '~' || path.startsWith('~/')) path = join(env.HOME || homedir(), path.slice(1));
  return resolve(path);
}

/** sqliteStore is the descriptor of the SQLite store. */
export const sqliteStore: StoreDescriptor<string> = {
  name: 'sqlite',
  schemes: ['sqlite'],
  crossProcess: true,
  parse: (text, options) => sqlitePath(text, options.env),
  async open(path) {
    const { SqliteStore } = await import('./index.js');
    return new SqliteStore(path);
  },
};
