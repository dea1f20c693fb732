/**
 * runOnce: run a piece of work once per key (a release, a migration) across a fleet, with the
 * outcome recorded durably in the store's ledger, at `baton/once/<key>`:
 *
 *   { v: 1, key, lock, status: running|done|failed|cut, attempt, term, identity, hostname, pid,
 *     startedAt, finishedAt?, exitCode?, signal?, reason?, tookOverFrom?, rerunOf?, previous: […] }
 *
 * Mutual exclusion comes from a lease (LeaderElector on the lock, default `once/<key>`); the
 * record of "done" lives in the ledger, not in any instance — so instances that start after
 * every earlier one was terminated still see it and do not run the work again.
 *
 * 1. Read the record. Done or failed (and no `rerun` of that failure)? Report it; never run.
 * 2. Campaign for the lock; others wait (or, with `wait: false`, report who holds it).
 * 3. Elected with term T: decide again from a fresh read (someone may have finished while we
 *    waited). Otherwise write `running` with T by compare-and-set — from a dead runner's
 *    `running`/`cut` record too: that is a takeover, allowed because its lease expired, and the
 *    reason the work must be idempotent.
 * 4. Run. Write the outcome with compare-and-set, only over our own `running` record (a runner
 *    whose term was superseded never overwrites its successor). Release the lock.
 */
import { hostname } from 'node:os';
import { LeaderElector, type ElectedEvent, type LeaderEvent } from '../core/elector.js';
import type { Clock } from '../core/clock.js';
import { InvalidConfigError, LeaseLostError, errorMessage } from '../core/errors.js';
import { TIMING_KEYS, checkOptionKeys, describeValue, validateLockName, type Timing } from '../core/options.js';
import { MAX_LOCK_NAME_LENGTH, type HolderMetadata, type Ledger, type LeaseStore } from '../core/store.js';
import { onceLedgerKey, readJson, requireLedger, updateJson, validateJobKey } from './ledger-keys.js';
import { functionRunner, type JobFunction, type RunContext, type RunOutcome, type Runner } from './runner.js';

/** OnceStatus: running (or its runner died), done (exit 0), failed (non-zero), cut (stopped mid-run; will be run again). */
export type OnceStatus = 'running' | 'done' | 'failed' | 'cut';

/** OnceAttempt summarises one earlier attempt. */
export interface OnceAttempt {
  attempt: number;
  status: OnceStatus;
  term: number;
  identity: string;
  startedAt: string;
  finishedAt?: string;
  exitCode?: number | null;
}

/** OnceRecord is the durable record of a key. Wall times are the runner's, for people. */
export interface OnceRecord {
  v: 1;
  key: string;
  lock: string;
  status: OnceStatus;
  /** 1 for the first run; +1 for each takeover or rerun. */
  attempt: number;
  term: number;
  identity: string;
  hostname: string;
  pid: number;
  startedAt: string;
  finishedAt?: string;
  exitCode?: number | null;
  signal?: string | null;
  reason?: string;
  /** Set when this attempt took over from a runner that died or was cut off. */
  tookOverFrom?: { identity: string; term: number; attempt: number };
  /** Set when this attempt is an explicit rerun of a failed attempt. */
  rerunOf?: number;
  /** Earlier attempts, newest first (at most 10). */
  previous: OnceAttempt[];
}

/** RunOnceOptions configures runOnce. Timing fields are the lock's elector's. */
export interface RunOnceOptions extends Partial<Timing> {
  /** Lock serialising the runners. Default `once/<key>` (characters a lock name cannot hold become `_`). */
  lock?: string;
  /** Wait while another instance runs the work (default true). False: report `busy` at once. */
  wait?: boolean;
  /** Give up waiting for the lock after this long (LeaseLostError). Default: wait forever. */
  timeoutMs?: number;
  /** Run again if — and only if — the recorded outcome is a failure. */
  rerun?: boolean;
  identity?: string;
  metadata?: HolderMetadata;
  clock?: Clock;
  /** Use this elector (same store, same lock) instead of creating one; runOnce starts and stops it. */
  elector?: LeaderElector;
  /** Abort to give up waiting (rejects with the signal's reason). */
  signal?: AbortSignal;
  /** Told who holds the lock while we wait (informational). */
  onWaiting?: (holder: string) => void;
}

/** ONCE_OPTION_KEYS: every key RunOnceOptions has; any other is refused. */
const ONCE_OPTION_KEYS = ['lock', 'wait', 'timeoutMs', 'rerun', 'identity', 'metadata', 'clock', 'elector', 'signal', 'onWaiting', ...TIMING_KEYS] as const;

/** OnceRunContext is what the work is given. */
export interface OnceRunContext extends RunContext {
  readonly key: string;
  readonly attempt: number;
  readonly identity: string;
  /** Set when this run takes over from a runner that died mid-run. */
  readonly tookOverFrom?: OnceRecord['tookOverFrom'];
}

/** OnceResult says what happened. */
export type OnceResult =
  /** This call ran the work; `record` holds its outcome. */
  | { readonly outcome: 'ran'; readonly record: OnceRecord; readonly run: RunOutcome }
  /** Someone ran it already (before, or while we waited); nothing was run here. */
  | { readonly outcome: 'recorded'; readonly record: OnceRecord }
  /** `wait: false` and another instance holds the lock (running it, or its lease not yet expired). */
  | { readonly outcome: 'busy'; readonly holder: string; readonly record: OnceRecord | null }
  /** This call started the work but it was stopped before it finished (lock lost); another instance will run it again. */
  | { readonly outcome: 'cut'; readonly record: OnceRecord; readonly run: RunOutcome };

/** defaultOnceLock is the lock a key uses when none is given. Two keys sharing a lock only serialise. */
export function defaultOnceLock(key: string): string {
  return `once/${key.replace(/[^A-Za-z0-9._:\/-]/g, '_')}`.slice(0, MAX_LOCK_NAME_LENGTH);
}

/** readOnceRecord returns the record of `key`, or null if it never ran. */
export async function readOnceRecord(store: LeaseStore, key: string): Promise<OnceRecord | null> {
  const ledger = requireLedger(store, 'once');
  return (await readJson<OnceRecord>(ledger, onceLedgerKey(validateJobKey(key))))?.value ?? null;
}

/** isFinal: done and failed are outcomes; running and cut mean the work may still need to run. */
export const isFinal = (s: OnceStatus): boolean => s === 'done' || s === 'failed';

/**
 * runOnce runs `fn` at most once at a time across every instance using the same store and
 * key, and not again once an outcome is recorded. `fn` must be idempotent: if its runner dies
 * mid-run, another instance runs it again after the lease expires. Resolves with what
 * happened; a thrown `fn` is recorded `failed` (never retried unless `rerun`).
 */
export async function runOnce<T>(
  store: LeaseStore,
  key: string,
  options: RunOnceOptions,
  fn: JobFunction<OnceRunContext, T>,
): Promise<OnceResult & { value?: T; error?: string }> {
  const sink: { value?: T } = {};
  let error: string | undefined;
  const result = await runOnceWith(store, key, options, async (ctx) => {
    const outcome = await functionRunner(fn, ctx as OnceRunContext, sink);
    if (outcome.kind === 'exit') error = outcome.error;
    return outcome;
  });
  return { ...result, ...(result.outcome === 'ran' ? { value: sink.value, error } : {}) };
}

/** runOnceWith is runOnce with a Runner (the CLI's runs a command under the watchdog). */
export async function runOnceWith(store: LeaseStore, key: string, options: RunOnceOptions, runner: Runner): Promise<OnceResult> {
  checkOptionKeys('runOnce', options, ONCE_OPTION_KEYS);
  if (options.timeoutMs !== undefined && (typeof options.timeoutMs !== 'number' || !Number.isFinite(options.timeoutMs) || options.timeoutMs < 0)) {
    throw new InvalidConfigError(`timeoutMs: must be a number of milliseconds (0 or more), got ${describeValue(options.timeoutMs)}`);
  }
  key = validateJobKey(key, 'key');
  const ledger = requireLedger(store, 'once');
  const lock = options.lock !== undefined ? validateLockName(options.lock, 'lock') : defaultOnceLock(key);
  // 1. Decided already? Then no lock, no election: just the record.
  const first = (await readJson<OnceRecord>(ledger, onceLedgerKey(key)))?.value ?? null;
  const rerunOf = options.rerun && first?.status === 'failed' ? first.attempt : undefined;
  if (first && isFinal(first.status) && rerunOf === undefined) return { outcome: 'recorded', record: first };

  const { lock: _l, wait: _w, timeoutMs, rerun: _r, elector: given, signal: userSignal, onWaiting, ...electorOptions } = options;
  const elector = given ?? new LeaderElector({ ...electorOptions, store, lock });
  if (elector.lock !== lock) throw new TypeError(`once: the elector is for lock "${elector.lock}", not "${lock}"`);
  const giveUp = AbortSignal.any([
    ...(userSignal ? [userSignal] : []),
    ...(timeoutMs !== undefined ? [AbortSignal.timeout(timeoutMs)] : []),
  ]);
  const seen = (e: LeaderEvent) => {
    if (!e.isSelf && e.holder !== null) onWaiting?.(e.holder);
  };
  elector.on('leader', seen);
  try {
    for (;;) {
      // 2. Wait for the lock (or report who has it).
      const won = await acquire(elector, options.wait !== false, giveUp, key, timeoutMs);
      if ('busy' in won) {
        return { outcome: 'busy', holder: won.busy, record: (await readJson<OnceRecord>(ledger, onceLedgerKey(key)))?.value ?? null };
      }
      // 3. Decide again, from the ledger, now that we hold the lock.
      const decision = await claimRun(ledger, key, lock, won.term, elector.identity, rerunOf);
      if (decision.kind === 'recorded') return { outcome: 'recorded', record: decision.record };
      if (decision.kind === 'other-lock') {
        throw new InvalidConfigError(`once: "${key}" is being run under lock "${decision.lock}", not "${lock}"; use the same --lock for a key everywhere`);
      }
      if (decision.kind === 'superseded') {
        await elector.resign();
        continue;
      }
      // 4. Run, then record the outcome over our own record only.
      const mine = decision.record;
      const ctx: OnceRunContext = {
        term: won.term,
        signal: won.signal,
        env: { BATON_LOCK: lock, BATON_TERM: String(won.term), BATON_KEY: key, BATON_IDENTITY: elector.identity, BATON_ATTEMPT: String(mine.attempt) },
        key,
        attempt: mine.attempt,
        identity: elector.identity,
        ...(mine.tookOverFrom ? { tookOverFrom: mine.tookOverFrom } : {}),
      };
      let run: RunOutcome;
      if (won.signal.aborted) run = { kind: 'cut', reason: 'the lock was lost before the run started' };
      else {
        try {
          run = await runner(ctx);
        } catch (err) {
          run = { kind: 'exit', exitCode: 1, error: errorMessage(err) };
        }
      }
      const record = await recordOutcome(ledger, key, mine, run);
      return { outcome: run.kind === 'cut' ? 'cut' : 'ran', record, run };
    }
  } finally {
    elector.off('leader', seen);
    await elector.stop();
  }
}

async function acquire(
  elector: LeaderElector,
  wait: boolean,
  giveUp: AbortSignal,
  key: string,
  timeoutMs: number | undefined,
): Promise<ElectedEvent | { busy: string }> {
  const stop = new AbortController();
  const onAbort = () => stop.abort(giveUp.reason);
  giveUp.addEventListener('abort', onAbort, { once: true });
  let onLeader: ((e: LeaderEvent) => void) | undefined;
  try {
    const busy = new Promise<{ busy: string }>((resolve) => {
      if (wait) return;
      onLeader = (e) => {
        if (!e.isSelf && e.holder !== null) resolve({ busy: e.holder });
      };
      elector.on('leader', onLeader);
      const known = elector.leader();
      if (known && !known.isSelf && known.holder !== null) resolve({ busy: known.holder });
    });
    elector.start();
    return await Promise.race([elector.elected({ signal: stop.signal }), busy]);
  } catch (err) {
    if (giveUp.aborted && timeoutMs !== undefined && (giveUp.reason as Error)?.name === 'TimeoutError') {
      const holder = elector.leader()?.holder;
      throw new LeaseLostError(`once: "${key}" is still being run${holder ? ` by ${holder}` : ''} after the ${timeoutMs}ms timeout`);
    }
    throw err;
  } finally {
    giveUp.removeEventListener('abort', onAbort);
    stop.abort();
    if (onLeader) elector.off('leader', onLeader);
  }
}

type Claim = { kind: 'recorded'; record: OnceRecord } | { kind: 'superseded' } | { kind: 'other-lock'; lock: string } | { kind: 'run'; record: OnceRecord };

function summary(r: OnceRecord): OnceAttempt {
  return { attempt: r.attempt, status: r.status, term: r.term, identity: r.identity, startedAt: r.startedAt, finishedAt: r.finishedAt, exitCode: r.exitCode };
}

async function claimRun(ledger: Ledger, key: string, lock: string, term: number, identity: string, rerunOf: number | undefined): Promise<Claim> {
  return updateJson<OnceRecord, Claim>(ledger, onceLedgerKey(key), (cur) => {
    const prev = cur?.value;
    if (prev && isFinal(prev.status) && !(rerunOf !== undefined && prev.status === 'failed' && prev.attempt === rerunOf)) {
      return { done: { kind: 'recorded', record: prev } };
    }
    // Terms of different locks are unrelated numbers: a run in progress under another lock cannot be judged.
    if (prev && !isFinal(prev.status) && prev.lock !== lock) return { done: { kind: 'other-lock', lock: prev.lock } };
    // A record from our term or a newer one means we are not the rightful runner any more.
    if (prev && prev.term >= term) return { done: { kind: 'superseded' } };
    const takeover = prev && !isFinal(prev.status);
    const record: OnceRecord = {
      v: 1,
      key,
      lock,
      status: 'running',
      attempt: (prev?.attempt ?? 0) + 1,
      term,
      identity,
      hostname: hostname(),
      pid: process.pid,
      startedAt: new Date().toISOString(),
      ...(takeover ? { tookOverFrom: { identity: prev.identity, term: prev.term, attempt: prev.attempt } } : {}),
      ...(prev && prev.status === 'failed' ? { rerunOf: prev.attempt } : {}),
      previous: prev ? [summary(prev), ...prev.previous].slice(0, 10) : [],
    };
    return { write: record, then: () => ({ kind: 'run', record }) };
  });
}

async function recordOutcome(ledger: Ledger, key: string, mine: OnceRecord, run: RunOutcome): Promise<OnceRecord> {
  return updateJson<OnceRecord, OnceRecord>(ledger, onceLedgerKey(key), (cur) => {
    const now = cur?.value;
    // Someone took over after our lease ran out: their record stands.
    if (!now || now.term !== mine.term || now.attempt !== mine.attempt || now.status !== 'running') return { done: now ?? mine };
    const status: OnceStatus = run.kind === 'cut' ? 'cut' : run.exitCode === 0 ? 'done' : 'failed';
    const record: OnceRecord = {
      ...now,
      status,
      finishedAt: new Date().toISOString(),
      exitCode: run.exitCode ?? null,
      ...(run.kind === 'exit' && run.signal ? { signal: run.signal } : {}),
      ...(run.kind === 'cut' ? { reason: run.reason } : run.error ? { reason: run.error } : {}),
    };
    return { write: record, then: () => record };
  });
}
