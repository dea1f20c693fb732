import { Command } from 'commander';
import { formatDuration } from '../../core/duration.js';
import type { LeaseRecord, LeaseStore } from '../../core/store.js';
import { validateLockName } from '../../core/options.js';
import { InvalidConfigError } from '../../core/errors.js';
import { CliExit, openCliStore, storeLabel, withLockOption, withStoreOption, type CommonOptions } from '../common.js';
import { isLive } from './is-leader.js';

/** LockStatus is the JSON `baton status --json` prints per lock. */
export interface LockStatus {
  lock: string;
  holder: string | null;
  term: number;
  hostname: string | null;
  pid: number | null;
  acquiredAt: string | null;
  renewedAt: string | null;
  leaseDurationMs: number;
  expiresInMs: number | null;
  transitions: number;
  stepDownRequested: boolean;
  version: string | null;
}

/** toStatus describes a record for people and scripts. expiresInMs is advisory (holder's clock). */
export function toStatus(r: LeaseRecord, nowWallMs = Date.now(), serverExpiry = false): LockStatus {
  const live = isLive(r, nowWallMs, serverExpiry);
  return {
    lock: r.lock,
    holder: live ? r.holder : null,
    term: r.term,
    hostname: live ? (r.metadata.hostname as string | undefined) ?? null : null,
    pid: live ? (r.metadata.pid as number | undefined) ?? null : null,
    acquiredAt: r.acquiredAt ? new Date(r.acquiredAt).toISOString() : null,
    renewedAt: r.renewedAt ? new Date(r.renewedAt).toISOString() : null,
    leaseDurationMs: r.leaseDurationMs,
    expiresInMs: live ? Math.max(0, r.renewedAt + r.leaseDurationMs - nowWallMs) : null,
    transitions: r.transitions,
    stepDownRequested: r.stepDownRequested,
    version: live ? (r.metadata.version as string | undefined) ?? null : null,
  };
}

/**
 * StatusSection: an extra section other features append to `baton status` (e.g. cron slots).
 * `json` is merged into the object printed with --lock; `byLock` into each lock's object of the
 * array printed without --lock (a lock with no lease record gets a row of its own).
 */
export type StatusSection = (
  store: LeaseStore,
  lock: string | undefined,
  json: boolean,
) => Promise<{ text?: string; json?: Record<string, unknown>; byLock?: Map<string, Record<string, unknown>> } | undefined>;
export const statusSections: StatusSection[] = [];

/** register adds `baton status`. */
export function register(program: Command): void {
  const cmd = program.command('status').summary('show who holds each lock, with which term').description(
    'Show the holder, term, hostname, pid, acquired/renewed times, time to expiry and transitions of\n' +
      'one lock (--lock) or of every lock in the store.',
  );
  withStoreOption(cmd);
  withLockOption(cmd, false);
  cmd
    .option('--json', 'print JSON: one object with --lock, else an array with one object per lock')
    .option('--watch', 'redraw as things change')
    .action(async (opts: CommonOptions & { json?: boolean; watch?: boolean }) => {
      const lock = opts.lock !== undefined ? validateLockName(opts.lock, '--lock') : undefined;
      const store = await openCliStore(opts);
      try {
        if (!lock && !store.list) throw new InvalidConfigError(`status: the ${store.kind} store cannot list locks; pass --lock NAME`);
        if (!opts.watch) {
          process.stdout.write(await render(store, lock, !!opts.json, storeLabel(opts)));
          throw new CliExit(0);
        }
        await watchLoop(store, lock, !!opts.json, storeLabel(opts));
      } finally {
        await store.close();
      }
    });
}

async function render(store: LeaseStore, lock: string | undefined, json: boolean, label: string): Promise<string> {
  const records = lock ? [await store.read(lock)].filter((r): r is LeaseRecord => !!r) : await store.list!();
  const now = Date.now();
  const rows = records.map((r) => toStatus(r, now, store.capabilities.serverExpiry));
  const extras = [];
  for (const section of statusSections) {
    const s = await section(store, lock, json);
    if (s) extras.push(s);
  }
  if (json) {
    if (lock) {
      const one: Record<string, unknown> = { ...(rows[0] ?? emptyStatus(lock)) };
      for (const e of extras) Object.assign(one, e.json);
      return `${JSON.stringify(one)}\n`;
    }
    const all: Record<string, unknown>[] = rows.map((r) => ({ ...r }));
    for (const e of extras) {
      for (const [name, extra] of e.byLock ?? []) {
        let row = all.find((r) => r.lock === name);
        if (!row) all.push((row = { ...emptyStatus(name) }));
        Object.assign(row, extra);
      }
    }
    return `${JSON.stringify(all)}\n`;
  }
  const lines = [`store: ${label}`];
  if (rows.length === 0) lines.push(lock ? `${lock}: never held` : 'no locks');
  for (const s of rows) {
    lines.push(
      s.holder
        ? `${s.lock}: held by ${s.holder} (term ${s.term}) on ${s.hostname ?? '?'} pid ${s.pid ?? '?'}; ` +
            `acquired ${s.acquiredAt}, renewed ${s.renewedAt}, expires in ${formatDuration(s.expiresInMs ?? 0)}; ` +
            `${s.transitions} transitions${s.stepDownRequested ? '; step-down requested' : ''}`
        : `${s.lock}: free (last term ${s.term}; ${s.transitions} transitions)`,
    );
  }
  for (const e of extras) if (e.text) lines.push(e.text);
  return `${lines.join('\n')}\n`;
}

function emptyStatus(lock: string): LockStatus {
  return {
    lock,
    holder: null,
    term: 0,
    hostname: null,
    pid: null,
    acquiredAt: null,
    renewedAt: null,
    leaseDurationMs: 0,
    expiresInMs: null,
    transitions: 0,
    stepDownRequested: false,
    version: null,
  };
}

async function watchLoop(store: LeaseStore, lock: string | undefined, json: boolean, label: string): Promise<never> {
  let wake: (() => void) | undefined;
  if (lock && store.watch) store.watch(lock, () => wake?.());
  const tty = process.stdout.isTTY && !json;
  for (;;) {
    const out = await render(store, lock, json, label);
    process.stdout.write(tty ? `\x1b[H\x1b[2J${out}` : out);
    await new Promise<void>((r) => {
      wake = r;
      setTimeout(r, 1000);
    });
  }
}
