/**
 * Task locks with ShedLock's semantics — run if free, skip otherwise; "at most for" and "at
 * least for" — but without comparing wall clocks of different hosts. One ledger entry per
 * lock, `baton/tasklock/<name>`:
 *
 *   { v: 1, name, holder, hold, phase: running|cooling|free, leaseMs, seen: { <bootId>: ms },
 *     term, acquiredAt, hostname, pid, last?: { holder, term, startedAt, finishedAt, ok, detail? } }
 *
 * ## How expiry is judged
 *
 * ShedLock stores `lockUntil` as a wall time and compares it with other hosts' clocks. Here a
 * hold (`hold`, a random id per acquisition) lasts `leaseMs` *as each host counts it on its
 * own monotonic clock from when that host first saw the hold*. The first sighting is
 * remembered in the entry itself (`seen[bootId]`, host-clock.ts), so it outlives the
 * short-lived processes (`baton lock` from a crontab) that make the observations:
 *
 * - the holder stamps its own boot with the moment *before* its acquiring write, so processes
 *   on the holder's host count exactly from the acquisition;
 * - another host stamps its boot when it first reads the hold, which is after the write, so it
 *   counts at least as long as the holder does — a lock may look held a little longer from
 *   another host (by the gap before that host first looked), never shorter.
 *
 * "At most for": the holder writes `leaseMs = atMostFor` and must be done by then on its own
 * clock — the CLI kills the command's process group shortly before (watchdog), the library
 * aborts `signal`. A crashed holder's lock is then taken over by the first host whose own
 * count reaches atMostFor. "At least for": when the work ends early, the holder does not free
 * the lock but rewrites `leaseMs = atLeastFor` on the same hold, so every host's count keeps
 * running from its first sighting — the holder may exit right away. Taking over is a
 * compare-and-set on the entry's version, so of several hosts that judge it expired one wins.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { InvalidConfigError, LeaseLostError, errorMessage } from '../core/errors.js';
import { defaultIdentity } from '../core/identity.js';
import { MAX_DURATION_MS, checkOptionKeys, describeValue, validateIdentity, validateLockName } from '../core/options.js';
import type { Ledger, LeaseStore } from '../core/store.js';
import { hostClock as realHostClock, type HostClock } from './host-clock.js';
import { readJson, requireLedger, taskLockLedgerKey, updateJson } from './ledger-keys.js';
import { unchangedForMs } from '../core/observation.js';

/** TaskLockOptions configures one attempt to take a task lock. */
export interface TaskLockOptions {
  /** The lock is considered released this long after it was taken, even if the holder never released it. */
  atMostForMs: number;
  /** The lock stays held at least this long after it was taken, even if the work ends sooner. Default 0. */
  atLeastForMs?: number;
  /** Holder identity (default `<hostname>-<pid>-<random>`). */
  identity?: string;
  /** Host-wide monotonic clock and boot id (tests). Default the real one. */
  hostClock?: HostClock;
}

/** TaskLockPhase: running (work in progress), cooling (work done, at-least-for not over), free. */
export type TaskLockPhase = 'running' | 'cooling' | 'free';

/** TaskLockRecord is the stored entry (see the module comment). */
export interface TaskLockRecord {
  v: 1;
  name: string;
  holder: string | null;
  hold: string | null;
  phase: TaskLockPhase;
  leaseMs: number;
  seen: Record<string, number>;
  /** Number of times the lock was taken: a fencing token for the work (BATON_TERM). */
  term: number;
  acquiredAt?: string;
  hostname?: string;
  pid?: number;
  last?: { holder: string; term: number; startedAt: string; finishedAt: string; ok: boolean; detail?: string };
}

/** TaskLockHold is a taken lock. Call `finish` exactly once when the work ends. */
export interface TaskLockHold {
  readonly name: string;
  readonly term: number;
  readonly identity: string;
  /** Aborted shortly before atMostFor runs out on this host's clock: stop the work. */
  readonly signal: AbortSignal;
  /** Host-clock instants: when the hold started (before its write) and when it must be over. */
  readonly startedMs: number;
  readonly deadlineMs: number;
  /** Ends the hold: frees the lock, or keeps it until atLeastFor. 'lost' if it was taken over (the work overran). */
  finish(result: { ok: boolean; detail?: string }): Promise<'released' | 'cooling' | 'lost'>;
}

/** TaskLockAttempt: taken, or who holds it and for how much longer as this host counts it. */
export type TaskLockAttempt =
  | { readonly acquired: true; readonly hold: TaskLockHold }
  | { readonly acquired: false; readonly holder: string | null; readonly phase: TaskLockPhase; readonly remainingMs: number };

/** At most this many boots' first sightings are kept per hold; dropping one only delays that host. */
const MAX_SEEN = 64;

/** MIN_AT_MOST_FOR_MS: shorter holds leave no time to stop the work before others may take over. */
export const MIN_AT_MOST_FOR_MS = 100;

/** killLeadMs: how long before atMostFor the work is told to stop (a fifth of it, 20 ms – 10 s). */
export function killLeadMs(atMostForMs: number): number {
  return Math.min(10_000, Math.max(20, Math.floor(atMostForMs / 5)));
}

/** validateTaskLockOptions checks the durations (InvalidConfigError naming the bad one; `names` label them). */
export function validateTaskLockOptions(
  o: TaskLockOptions,
  names: { atMostFor: string; atLeastFor: string; typed?: { atMostFor?: string; atLeastFor?: string } } = { atMostFor: 'atMostForMs', atLeastFor: 'atLeastForMs' },
): { atMostForMs: number; atLeastForMs: number } {
  const most = o?.atMostForMs;
  const least = o?.atLeastForMs ?? 0;
  // Messages echo the value as the caller wrote it (a flag's text), else the number given.
  const shownMost = names.typed?.atMostFor !== undefined ? `"${names.typed.atMostFor}"` : typeof most === 'number' ? `${most}ms` : describeValue(most);
  const shownLeast = names.typed?.atLeastFor !== undefined ? `"${names.typed.atLeastFor}"` : typeof least === 'number' ? `${least}ms` : describeValue(least);
  if (typeof most !== 'number' || !Number.isFinite(most) || most < MIN_AT_MOST_FOR_MS || most > MAX_DURATION_MS) {
    const why = typeof most === 'number' && most < MIN_AT_MOST_FOR_MS ? ' (the command must be stopped, SIGTERM then SIGKILL, before the lock runs out)' : '';
    throw new InvalidConfigError(`${names.atMostFor}: must be between ${MIN_AT_MOST_FOR_MS}ms and 24h, got ${shownMost}${why}`);
  }
  if (typeof least !== 'number' || !Number.isFinite(least) || least < 0) {
    throw new InvalidConfigError(`${names.atLeastFor}: must be a duration of zero or more, got ${shownLeast}`);
  }
  if (least > most) throw new InvalidConfigError(`${names.atLeastFor} (${shownLeast}) must not be longer than ${names.atMostFor} (${shownMost})`);
  return { atMostForMs: most, atLeastForMs: least };
}

/** readTaskLock returns the stored entry of a task lock, or null. */
export async function readTaskLock(store: LeaseStore, name: string): Promise<TaskLockRecord | null> {
  return (await readJson<TaskLockRecord>(requireLedger(store, 'lock'), taskLockLedgerKey(validateLockName(name))))?.value ?? null;
}

/**
 * tryTaskLock takes the lock if it is free or its hold has run out (as this host counts it),
 * and otherwise reports who holds it — never waits. A first sighting of someone else's hold
 * is stamped into the entry so later processes on this host keep counting from it.
 */
export async function tryTaskLock(store: LeaseStore, name: string, options: TaskLockOptions): Promise<TaskLockAttempt> {
  checkOptionKeys('withTaskLock', options, ['atMostForMs', 'atLeastForMs', 'identity', 'hostClock']);
  name = validateLockName(name, 'lock');
  const { atMostForMs, atLeastForMs } = validateTaskLockOptions(options);
  const identity = validateIdentity(options.identity ?? defaultIdentity());
  const clock = options.hostClock ?? realHostClock;
  const ledger = requireLedger(store, 'lock');
  const key = taskLockLedgerKey(name);
  type Step = { acquired: false; holder: string | null; phase: TaskLockPhase; remainingMs: number } | { acquired: true; record: TaskLockRecord; startedMs: number };
  const step = await updateJson<TaskLockRecord, Step>(ledger, key, (cur) => {
    const rec = cur?.value;
    const now = clock.monotonicMs();
    if (rec && rec.holder !== null && rec.hold !== null) {
      const seenAt = rec.seen[clock.bootId];
      if (seenAt === undefined) {
        const seen = { ...rec.seen, [clock.bootId]: now };
        trimSeen(seen, clock.bootId);
        const remainingMs = rec.leaseMs;
        return { write: { ...rec, seen }, then: () => ({ acquired: false, holder: rec.holder, phase: rec.phase, remainingMs }) };
      }
      // The observation rule (core/observation.ts), with this host's sighting kept in the entry.
      const remainingMs = rec.leaseMs - unchangedForMs({ sinceMs: seenAt }, now);
      if (remainingMs > 0) return { done: { acquired: false, holder: rec.holder, phase: rec.phase, remainingMs } };
    }
    // Free, or the hold has run out by our own count: take it. `now` was read before this write.
    const record: TaskLockRecord = {
      v: 1,
      name,
      holder: identity,
      hold: randomUUID(),
      phase: 'running',
      leaseMs: atMostForMs,
      seen: { [clock.bootId]: now },
      term: (rec?.term ?? 0) + 1,
      acquiredAt: new Date().toISOString(),
      hostname: hostname(),
      pid: process.pid,
      ...(rec?.last ? { last: rec.last } : {}),
    };
    return { write: record, then: () => ({ acquired: true, record, startedMs: now }) };
  });
  if (!step.acquired) return step;
  return { acquired: true, hold: makeHold(ledger, key, step.record, step.startedMs, { atMostForMs, atLeastForMs }, clock) };
}

function trimSeen(seen: Record<string, number>, keep: string): void {
  for (const boot of Object.keys(seen)) {
    if (Object.keys(seen).length <= MAX_SEEN) return;
    if (boot !== keep) delete seen[boot];
  }
}

function makeHold(ledger: Ledger, key: string, mine: TaskLockRecord, startedMs: number, d: { atMostForMs: number; atLeastForMs: number }, clock: HostClock): TaskLockHold {
  const deadlineMs = startedMs + d.atMostForMs - killLeadMs(d.atMostForMs);
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new LeaseLostError(`lock: "${mine.name}" reached its at-most-for (${d.atMostForMs}ms); stop the work`)),
    Math.max(0, deadlineMs - clock.monotonicMs()),
  );
  let finished: Promise<'released' | 'cooling' | 'lost'> | undefined;
  return {
    name: mine.name,
    term: mine.term,
    identity: mine.holder!,
    signal: controller.signal,
    startedMs,
    deadlineMs,
    finish(result) {
      clearTimeout(timer);
      finished ??= updateJson<TaskLockRecord, 'released' | 'cooling' | 'lost'>(ledger, key, (cur) => {
        const rec = cur?.value;
        if (!rec || rec.hold !== mine.hold) return { done: 'lost' };
        const last = {
          holder: mine.holder!,
          term: mine.term,
          startedAt: mine.acquiredAt!,
          finishedAt: new Date().toISOString(),
          ok: result.ok,
          ...(result.detail ? { detail: result.detail.slice(0, 500) } : {}),
        };
        if (clock.monotonicMs() - startedMs < d.atLeastForMs) {
          // Keep the same hold (so every host's count goes on from its first sighting), now for atLeastFor.
          return { write: { ...rec, phase: 'cooling', leaseMs: d.atLeastForMs, last }, then: () => 'cooling' };
        }
        const free: TaskLockRecord = { v: 1, name: rec.name, holder: null, hold: null, phase: 'free', leaseMs: 0, seen: {}, term: rec.term, last };
        return { write: free, then: () => 'released' };
      });
      return finished;
    },
  };
}

/** TaskLockResult: ran (with fn's value and what became of the lock), or skipped because it was held. */
export type TaskLockResult<T> =
  | { readonly ran: true; readonly value: T; readonly lock: 'released' | 'cooling' | 'lost' }
  | { readonly ran: false; readonly holder: string | null; readonly phase: TaskLockPhase; readonly remainingMs: number };

/**
 * withTaskLock runs `fn` if the lock `name` is free, and skips it otherwise (ShedLock's
 * semantics; see the module comment for how expiry is judged without wall clocks). `fn` gets
 * a signal aborted shortly before atMostFor — honour it: after atMostFor another host may
 * take the lock. If `fn` throws, the lock is finished the same way and the error rethrown.
 */
export async function withTaskLock<T>(
  store: LeaseStore,
  name: string,
  options: TaskLockOptions,
  fn: (ctx: { signal: AbortSignal; term: number; name: string }) => T | Promise<T>,
): Promise<TaskLockResult<T>> {
  const attempt = await tryTaskLock(store, name, options);
  if (!attempt.acquired) return { ran: false, holder: attempt.holder, phase: attempt.phase, remainingMs: attempt.remainingMs };
  const { hold } = attempt;
  let value: T;
  try {
    value = await fn({ signal: hold.signal, term: hold.term, name: hold.name });
  } catch (err) {
    await hold.finish({ ok: false, detail: errorMessage(err) }).catch(() => {});
    throw err;
  }
  return { ran: true, value, lock: await hold.finish({ ok: true }) };
}
