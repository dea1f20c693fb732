/**
 * decideClaim is rules 1 and 2 of the elector (see LeaderElector) on a compare-and-set store,
 * as a pure function: given the record a standby observed and since when, what it does next —
 * write (and with which expected revision), or wait, and for how long. Kept apart from the
 * elector so the rules read in one place and are tested as a table (test/core/claim-decision.test.ts).
 */
import type { LeaseRecord } from './store.js';

/**
 * SERVER_ROUNDING_MS is added to a server-expired record's expiry before a standby claims it:
 * Redis counts expiry in whole milliseconds and drops a key only once its clock is past it.
 */
export const SERVER_ROUNDING_MS = 2;

/** ClaimContext is what decideClaim knows besides the record. */
export interface ClaimContext {
  /** Monotonic now. */
  readonly nowMs: number;
  /** When this candidate first saw the record's revision, on its monotonic clock. */
  readonly observedAtMs: number;
  /** The store removes expired records itself (StoreCapabilities.serverExpiry). */
  readonly serverExpiry: boolean;
  /** The live feed reports every renewal of a server-expired record (LeaseStore.watchSeesRenewals). */
  readonly hearsRenewals: boolean;
  /** The revision a create-if-absent was already tried at, on a server-expired store. */
  readonly claimedRevision?: string;
  /** A record this very elector wrote that backs no current leadership (free to take at once). */
  readonly orphanOfOurs: boolean;
  readonly retryPeriodMs: number;
}

/**
 * ClaimDecision: `write` with `expected` (null: create if absent); `waitForExpiry` (a timer for
 * the expiry we count, `ms` from now); `waitForRemoval` (the server removes it; look again `ms`
 * from now at the latest, counting from `lookFromMs`).
 */
export type ClaimDecision =
  | { readonly kind: 'write'; readonly expected: string | null; readonly claimsRevision?: string }
  | { readonly kind: 'waitForExpiry'; readonly ms: number }
  | { readonly kind: 'waitForRemoval'; readonly ms: number; readonly lookFromMs: number };

/** decideClaim: see the file comment. `record` null means absent. */
export function decideClaim(record: LeaseRecord | null, c: ClaimContext): ClaimDecision {
  // 1. Absent: create it.
  if (!record) return { kind: 'write', expected: null };
  // 1. Released (or nothing acts under it any more): compare-and-set it.
  if (record.holder === null || c.orphanOfOurs) return { kind: 'write', expected: record.revision };
  if (c.serverExpiry && c.hearsRenewals && c.claimedRevision !== record.revision) {
    // 2. The feed reports every renewal, so the server's timer for this revision started before
    // we saw it: once leaseDuration (plus a millisecond the server may round away) has passed on
    // our clock, the server drops the record at the next access — a create sent then is that
    // access (Redis expires a key lazily when it is touched; its active cycle would only notice
    // it up to 1/hz later). Still create-if-absent: a live record is never taken over. Tried
    // once per revision (`claimsRevision`); if it was not gone, wait as below.
    const dueMs = c.observedAtMs + record.leaseDurationMs + SERVER_ROUNDING_MS;
    if (c.nowMs < dueMs) return { kind: 'waitForExpiry', ms: dueMs - c.nowMs };
    return { kind: 'write', expected: null, claimsRevision: record.revision };
  }
  if (c.serverExpiry) {
    // 2. The server removes an expired record; a live one is never taken over. Renewals there
    // may keep the revision (etcd keepalives), so once the record outlives the wait, count the
    // next look from now — never re-read in a loop.
    const lookMs = record.leaseDurationMs + c.retryPeriodMs;
    const lookFromMs = c.nowMs - c.observedAtMs >= lookMs ? c.nowMs : c.observedAtMs;
    return { kind: 'waitForRemoval', ms: lookFromMs + lookMs - c.nowMs, lookFromMs };
  }
  // 2. Expired by our own observation only: the revision unchanged for leaseDuration.
  const expiresAt = c.observedAtMs + record.leaseDurationMs;
  if (c.nowMs < expiresAt) return { kind: 'waitForExpiry', ms: expiresAt - c.nowMs };
  return { kind: 'write', expected: record.revision };
}
