import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { InvalidConfigError } from './errors.js';
import type { LeaseStore } from './store.js';

/** StoreOpenOptions are passed to a store module's `open`. */
export interface StoreOpenOptions {
  /** Environment for defaults (BATON_*); process.env by default. */
  env?: NodeJS.ProcessEnv;
  /** The URL exactly as given: stores whose URLs list several hosts (`etcd://a:1,b:2`) read it. */
  text?: string;
}

/** A store module: each `src/stores/<name>/index.ts` exports `open`. */
export interface StoreModule {
  open(url: URL, options: StoreOpenOptions): Promise<LeaseStore>;
}

/**
 * SCHEMES maps a URL scheme to its store module, imported only when that scheme is used, so
 * the core never loads a store's SDK.
 */
const SCHEMES: Record<string, () => Promise<StoreModule>> = {
  memory: () => import('../stores/memory/open.js'),
  sqlite: () => import('../stores/sqlite/open.js'),
  redis: () => import('../stores/redis/open.js'),
  rediss: () => import('../stores/redis/open.js'),
  postgres: () => import('../stores/postgres/open.js'),
  postgresql: () => import('../stores/postgres/open.js'),
  etcd: () => import('../stores/etcd/open.js'),
  k8s: () => import('../stores/k8s/open.js'),
};

/** KNOWN_SCHEMES lists every scheme baton names, implemented or planned, for error messages. */
const PLANNED = ['dynamodb', 'zk', 'nats', 'azblob', 'mysql'];

/** registerStoreScheme adds a scheme at run time (for stores shipped outside this package). */
export function registerStoreScheme(scheme: string, load: () => Promise<StoreModule>): void {
  SCHEMES[scheme.toLowerCase()] = load;
}

/** defaultStorePath is `${XDG_STATE_HOME:-$HOME/.local/state}/baton/baton.db`. */
export function defaultStorePath(env: NodeJS.ProcessEnv = process.env): string {
  const state = env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : join(env.HOME || homedir(), '.local', 'state');
  return join(state, 'baton', 'baton.db');
}

/** defaultStoreUrl is BATON_STORE, else the embedded SQLite file at defaultStorePath(). */
export function defaultStoreUrl(env: NodeJS.ProcessEnv = process.env): string {
  return env.BATON_STORE?.trim() || `sqlite:${defaultStorePath(env)}`;
}

/**
 * parseStoreUrl checks a store URL and returns it as a URL. `sqlite:PATH` accepts relative
 * and absolute paths (`sqlite:./x.db`, `sqlite:/var/lib/baton.db`, `sqlite:///abs.db`).
 * Throws InvalidConfigError with a one-line reason.
 */
export function parseStoreUrl(text: string): URL {
  if (typeof text !== 'string' || text.trim() === '') throw new InvalidConfigError('store: the store URL is empty');
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):(.*)$/s.exec(text.trim());
  if (!m) throw new InvalidConfigError(`store: "${redactUrl(text)}" is not a store URL (expected e.g. sqlite:PATH, postgres://…, redis://…, memory:)`);
  const scheme = m[1]!.toLowerCase();
  if (!SCHEMES[scheme]) {
    const hint = PLANNED.includes(scheme) ? 'is not available in this version of baton' : 'is not a known store';
    throw new InvalidConfigError(`store: scheme "${scheme}:" ${hint} (available: ${Object.keys(SCHEMES).sort().join(', ')})`);
  }
  if (scheme === 'sqlite') {
    let path = m[2]!;
    if (path.startsWith('//')) path = path.slice(2);
    if (path === '') throw new InvalidConfigError('store: sqlite: needs a file path, e.g. sqlite:/var/lib/baton/baton.db');
    if (path.includes('\0')) throw new InvalidConfigError('store: sqlite: the path contains a NUL byte');
    return new URL(`sqlite:${path === ':memory:' ? path : encodeURI(resolve(path))}`);
  }
  try {
    return new URL(text.trim());
  } catch {
    // WHATWG URLs hold one host; `scheme://h1:p1,h2:p2/…` is checked with its first host, and
    // the store reads the full list from the text it is given.
    const first = text.trim().replace(/^([^:]+:\/\/(?:[^@/]*@)?)([^,/?#]+),[^/?#]*/, '$1$2');
    try {
      if (first !== text.trim()) return new URL(first);
    } catch {
      // fall through
    }
    throw new InvalidConfigError(`store: "${redactUrl(text)}" is not a valid URL`);
  }
}

/** sqlitePathOf returns the file path of a parsed sqlite: URL. */
export function sqlitePathOf(url: URL): string {
  return decodeURIComponent(url.pathname);
}

/** openStore opens the store a URL names (default: defaultStoreUrl()). */
export async function openStore(text?: string, options: StoreOpenOptions = {}): Promise<LeaseStore> {
  const given = text ?? defaultStoreUrl(options.env);
  const url = parseStoreUrl(given);
  const mod = await SCHEMES[url.protocol.slice(0, -1)]!();
  return mod.open(url, { ...options, text: given.trim() });
}

/** redactUrl hides a password in a URL so it can be printed or logged. */
export function redactUrl(text: string): string {
  return String(text).replace(/^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^:@/]*):[^@/]*@/, '$1:***@').replace(/([?&](password|pass|secret|token|key)=)[^&]*/gi, '$1***');
}
