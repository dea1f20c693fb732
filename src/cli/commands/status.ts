import { Command } from 'commander';
import { formatDuration } from '../../core/duration.js';
import type { LeaseRecord, LeaseStore } from '../../core/store.js';
import { validateLockName } from '../../core/options.js';
import { InvalidConfigError } from '../../core/errors.js';
import { CliExit, openCliStore, storeLabel, storeTarget, withLockOption, withStoreOption, type CommonOptions } from '../common.js';
import { examples } from '../help.js';
import { deadLocalHolder, freeLeaseView, leaseView, type LeaseView } from '../../view/lease-view.js';
import { renderShardGroup, shardGroupView } from '../../view/shards-view.js';
import { readShardGroup } from '../../shards/status.js';
import { describeStepDown, readStepDowns } from '../../core/hang-backoff.js';
import { readCandidatesView, renderCandidates, type CandidatesView } from '../../view/candidates-view.js';

const STATUS_FIELDS = [
  'lock', 'holder', 'term', 'hostname', 'pid', 'acquiredAt', 'renewedAt', 'leaseDurationMs', 'expiresInMs', 'transitions', 'stepDownRequested', 'version',
] as const satisfies readonly (keyof LeaseView)[];

/** LockStatus is the JSON `baton status --json` prints per lock: the lease view's fields it has always printed. */
export type LockStatus = Pick<LeaseView, (typeof STATUS_FIELDS)[number]>;

/** toStatus picks the status fields of a lease view (server/lease-view.ts). */
export function toStatus(view: LeaseView): LockStatus {
  return Object.fromEntries(STATUS_FIELDS.map((k) => [k, view[k]])) as LockStatus;
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
    'Show the holder, term, hostname, pid, acquired/renewed times, time to expiry and transitions of ' +
      'one lock (--lock) or of every lock in the store, and the candidates registered for it (run, serve ' +
      'and cron with --register, --app-version, --priority, --label or --prefer): identity, host, app ' +
      'version, priority, labels, start and last beat (both by the candidate\'s own clock), and who would ' +
      'be preferred under each --prefer rule and on a graceful stop.',
  );
  withStoreOption(cmd);
  withLockOption(cmd, false);
  cmd
    .option('--json', 'print JSON: one object with --lock, else an array with one object per lock')
    .option('--watch', 'redraw as things change')
    .option('--group <name>', 'show a shard group: its members and the owner and term of every shard')
    .addHelpText(
      'after',
      examples([
        ['who leads each lock of the default store', 'baton status'],
        ['one lock, for a script', 'baton status --lock nightly-report --json'],
        ['follow a shared store live', 'baton status --store postgres://baton@db/ops --watch'],
        ['the shards of a group: members, owners and terms', 'baton status --group orders'],
      ]),
    )
    .action(async (opts: CommonOptions & { json?: boolean; watch?: boolean; group?: string }) => {
      const lock = opts.lock !== undefined ? validateLockName(opts.lock, '--lock') : undefined;
      const group = opts.group !== undefined ? validateLockName(opts.group, '--group') : undefined;
      const store = await openCliStore(storeTarget(opts, 'read'));
      try {
        if (group !== undefined) {
          const view = shardGroupView(await readShardGroup(store, group), { serverExpiry: store.capabilities.serverExpiry });
          process.stdout.write(opts.json ? `${JSON.stringify(view, null, 2)}\n` : renderShardGroup(view));
          throw new CliExit(0);
        }
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
  const rows = records.map((r) => toStatus(leaseView(r, { nowWallMs: now, serverExpiry: store.capabilities.serverExpiry })));
  const deadPids = new Map(records.map((r) => [r.lock, deadLocalHolder(r)]));
  // Why a leader last stepped down for hung work (docs/watchdog.md): kept in the ledger.
  const stepDowns = await readStepDowns(store, lock);
  // The candidate registry of each lock shown (core/candidates.ts), where the store keeps one.
  const candidates = new Map<string, CandidatesView>();
  for (const name of lock ? [lock] : records.map((r) => r.lock)) {
    const view = await readCandidatesView(store, name, rows.find((r) => r.lock === name)?.holder ?? null, now);
    if (view && view.candidates.length > 0) candidates.set(name, view);
  }
  const withCandidates = (name: string) => {
    const v = candidates.get(name);
    return v ? { candidates: v.candidates, preferred: v.preferred } : {};
  };
  const extras = [];
  for (const section of statusSections) {
    const s = await section(store, lock, json);
    if (s) extras.push(s);
  }
  if (json) {
    if (lock) {
      const one: Record<string, unknown> = { ...(rows[0] ?? emptyStatus(lock)) };
      if (stepDowns.has(lock)) one.lastStepDown = stepDowns.get(lock);
      Object.assign(one, withCandidates(lock));
      for (const e of extras) Object.assign(one, e.json);
      return `${JSON.stringify(one)}\n`;
    }
    const all: Record<string, unknown>[] = rows.map((r) => ({ ...r, ...(stepDowns.has(r.lock) ? { lastStepDown: stepDowns.get(r.lock) } : {}), ...withCandidates(r.lock) }));
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
  if (rows.length === 0) lines.push(lock ? `${lock}: ${stepDowns.has(lock) ? 'free' : 'never held'}` : 'no locks');
  if (rows.length === 0 && lock && stepDowns.has(lock)) lines.push(`  last step-down: ${describeStepDown(stepDowns.get(lock)!)}`);
  if (rows.length === 0 && lock && candidates.has(lock)) lines.push(...renderCandidates(candidates.get(lock)!));
  for (const s of rows) {
    lines.push(
      s.holder
        ? `${s.lock}: held by ${s.holder} (term ${s.term}) on ${s.hostname ?? '?'} pid ${s.pid ?? '?'}; ` +
            `acquired ${s.acquiredAt}, renewed ${s.renewedAt}, expires in ${formatDuration(s.expiresInMs ?? 0)}; ` +
            `${transitions(s.transitions)}${s.stepDownRequested ? '; step-down requested' : ''}` +
            (deadPids.get(s.lock) ? `; pid ${deadPids.get(s.lock)} is not running on this host: the lease is no longer renewed and runs out in ${formatDuration(s.expiresInMs ?? 0)}` : '')
        : `${s.lock}: free (last term ${s.term}; ${transitions(s.transitions)})`,
    );
    const last = stepDowns.get(s.lock);
    if (last) lines.push(`  last step-down: ${describeStepDown(last)}`);
    const registry = candidates.get(s.lock);
    if (registry) lines.push(...renderCandidates(registry));
  }
  for (const e of extras) if (e.text) lines.push(e.text);
  return `${lines.join('\n')}\n`;
}

function transitions(n: number): string {
  return `${n} transition${n === 1 ? '' : 's'}`;
}

function emptyStatus(lock: string): LockStatus {
  return toStatus(freeLeaseView(lock));
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
