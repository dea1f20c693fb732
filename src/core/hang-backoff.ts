/**
 * The back-off after a step-down for hung work (issue 28): an instance whose work stopped
 * reporting progress, or failed its health check, waits before campaigning again, and waits
 * longer each time it happens again in a row. If the work hangs on every instance (a downstream
 * that is down for everyone), leadership then changes hands ever more slowly instead of
 * bouncing around the fleet every few seconds.
 *
 * The wait after the n-th hang in a row is `min(HANG_BACKOFF_MAX_MS, base × 2^(n−1))`, where
 * base is the progress timeout (or the health check's interval × failures), at least one
 * second. The streak starts over when a term ends for any other reason, or when a hung term had
 * led for longer than HANG_BACKOFF_MAX_MS (its work made progress for a long time first).
 */

import { formatDuration } from './duration.js';
import type { LeaseStore } from './store.js';

/** HANG_BACKOFF_MAX_MS: the longest wait after a hung term (10 minutes). */
export const HANG_BACKOFF_MAX_MS = 10 * 60 * 1000;

/** HANG_BACKOFF_MIN_BASE_MS: the first wait is never shorter than this (1 second). */
export const HANG_BACKOFF_MIN_BASE_MS = 1000;

/** hangBackoffMs is the wait after the `streak`-th hung term in a row (streak ≥ 1). */
export function hangBackoffMs(baseMs: number, streak: number, maxMs = HANG_BACKOFF_MAX_MS): number {
  const base = Math.max(HANG_BACKOFF_MIN_BASE_MS, baseMs);
  const exponent = Math.min(Math.max(0, streak - 1), 30);
  return Math.min(maxMs, base * 2 ** exponent);
}

/**
 * maxHungTerms bounds how many terms one instance can start in `windowMs` when its work hangs
 * every time: each term lasts at least `minTermMs` (the time it takes to notice the hang) and is
 * followed by the growing back-off. With N instances, leadership changes at most N times this
 * (the bench's ping-pong check, bench/hung-work.ts).
 */
export function maxHungTerms(windowMs: number, minTermMs: number, baseMs: number, maxMs = HANG_BACKOFF_MAX_MS): number {
  let t = 0;
  let n = 0;
  while (n < 1_000_000) {
    // Term n+1 starts at t (no earlier), lasts minTermMs, then waits its back-off.
    if (t > windowMs) break;
    n += 1;
    t += minTermMs + hangBackoffMs(baseMs, n, maxMs);
  }
  return n;
}

/**
 * HangStreak counts hung terms in a row and says how long to wait after each (see above).
 * One per candidate; `hung` after a hung term, `healthy` after a term that ended otherwise.
 */
export class HangStreak {
  private streak = 0;

  constructor(
    private readonly baseMs: number,
    private readonly maxMs = HANG_BACKOFF_MAX_MS,
  ) {}

  /** hung records a hung term that led for `ledMs` and returns how long to wait now. */
  hung(ledMs: number): number {
    this.streak = ledMs > this.maxMs ? 1 : this.streak + 1;
    return hangBackoffMs(this.baseMs, this.streak, this.maxMs);
  }

  /** healthy starts the streak over: the last term did not end hung. */
  healthy(): void {
    this.streak = 0;
  }

  /** count is the number of hung terms in a row so far. */
  get count(): number {
    return this.streak;
  }
}

/**
 * LastStepDown is why a leader last stepped down on purpose (for hung work), kept in the store's
 * ledger under `baton/step-down/<lock>` — not in the lease record, which some stores delete on
 * release — so `baton status` can say it even after another instance took over.
 */
export interface LastStepDown {
  readonly holder: string;
  readonly term: number;
  /** The StopReason: 'hung' for hung work. */
  readonly reason: string;
  /** Said by the one that stepped down (e.g. "no heartbeat within …"). */
  readonly note?: string;
  /** Wall-clock time of the step-down (ISO 8601), for people only. */
  readonly at: string;
  /** How long it waits before campaigning again, if it does. */
  readonly backoffMs?: number;
}

/** stepDownLedgerKey is where the last step-down of `lock` is kept. */
export const stepDownLedgerKey = (lock: string): string => `baton/step-down/${lock}`;

/** parseLastStepDown reads a ledger value, or undefined if it is not a well-formed LastStepDown. */
export function parseLastStepDown(value: string): LastStepDown | undefined {
  try {
    const v = JSON.parse(value) as Partial<LastStepDown> | null;
    if (!v || typeof v !== 'object' || typeof v.holder !== 'string' || typeof v.term !== 'number' || typeof v.reason !== 'string' || typeof v.at !== 'string') return undefined;
    return v as LastStepDown;
  } catch {
    return undefined;
  }
}

/**
 * recordStepDown writes `entry` as the last step-down of `lock` (best effort: a store without a
 * ledger, or a failure, only loses the explanation). A newer term already recorded wins.
 */
export async function recordStepDown(store: LeaseStore, lock: string, entry: LastStepDown): Promise<void> {
  const ledger = store.ledger;
  if (!ledger) return;
  const key = stepDownLedgerKey(lock);
  for (let attempt = 0; attempt < 3; attempt++) {
    const current = await ledger.get(key);
    const known = current && parseLastStepDown(current.value);
    if (known && known.term > entry.term) return;
    const result = await ledger.put(key, current?.version ?? null, JSON.stringify(entry));
    if (result.ok) return;
  }
}

/**
 * readStepDowns reads the last step-down of `lock`, or of every lock (by lock name); with
 * `{ prefix }`, of every lock whose name starts with it (a shard group's shards, say), at most
 * `limit` of them (default: the ledger's, 1000).
 */
export async function readStepDowns(store: LeaseStore, lock?: string | { prefix: string; limit?: number }): Promise<Map<string, LastStepDown>> {
  const found = new Map<string, LastStepDown>();
  if (!store.ledger) return found;
  const entries = typeof lock === 'string' ? [await store.ledger.get(stepDownLedgerKey(lock))] : await store.ledger.list(stepDownLedgerKey(lock?.prefix ?? ''), lock?.limit);
  const prefix = stepDownLedgerKey('');
  for (const e of entries) {
    const v = e && parseLastStepDown(e.value);
    if (e && v) found.set(e.key.slice(prefix.length), v);
  }
  return found;
}

/** describeStepDown is one line for people: who stepped down from which term, when, why, and for how long. */
export function describeStepDown(d: LastStepDown): string {
  return `${d.holder} (term ${d.term}) at ${d.at}: ${d.reason}${d.note ? ` (${d.note})` : ''}${d.backoffMs !== undefined ? `; backed off ${formatDuration(d.backoffMs)}` : ''}`;
}
