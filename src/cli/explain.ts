/**
 * What a store and a timing mean, in numbers: the arithmetic behind `baton explain`. Pure, so
 * a test can check every figure against its formula.
 *
 *   crash failover   from the leader's crash to a new leader. The last renewal happened at most
 *                    one retry period before the crash; a standby counts a whole lease from when
 *                    it saw that renewal, then needs one round trip to acquire. A polling standby
 *                    (no notification) may notice up to one jittered retry period late; a store
 *                    that expires leases itself adds its own sweep delay.
 *   graceful handover  release + notification + acquire: about `handoverRoundTrips` × RTT on a
 *                    notifying store; a polling standby notices within a jittered retry period.
 *   candidate registry  when on: one ledger write per candidate per lease duration (its refresh
 *                    period), and with --prefer one ledger list by the leader as often.
 *   safety margin    lease − renewDeadline: how long a leader may be paused (GC, SIGSTOP, a
 *                    stalled VM) or its clock run slow relative to the others', and still stop
 *                    before anyone else can start.
 */
import { PRUNE_AFTER_BEATS } from '../core/candidates.js';
import type { Timing } from '../core/options.js';

/** StoreFacts are what explain knows of the store (from the opened store, or defaults). */
export interface StoreFacts {
  /** Standbys are notified of changes (the store has `watch`). */
  notifies: boolean;
  /** The store expires leases on its own timer. */
  serverExpiry: boolean;
  /** Lease durations are rounded up to this many ms. */
  leaseGranularityMs?: number;
  /** Extra delay of the server's own expiry (etcd's lease sweep: 500 ms). */
  expirySweepMs?: number;
  /** Store round trip, median and worst seen, when measured. */
  rttMs?: { p50: number; max: number };
  /** The registry lives on the candidates' leases or sessions (the store has `presence`): no beats, no pruning. */
  presence?: boolean;
}

/** Explanation is what `baton explain` prints (and `--json` prints as is). */
export interface Explanation {
  timing: Timing & { effectiveLeaseDurationMs: number };
  crashFailoverMs: { best: number; worst: number };
  gracefulHandoverMs: { typical: number; worst: number } | null;
  safetyMarginMs: number;
  /** The clock-rate difference the margin absorbs over one lease, as a fraction. */
  driftTolerance: number;
  renewalsBeforeStepDown: number;
  requestsPerSecond: { leader: number; standby: number };
  /**
   * The candidate registry's cost when it is on (run/serve/cron --register, --app-version, …):
   * each candidate rewrites its entry once per lease duration (none on a store with presence);
   * the leader lists it every PRUNE_AFTER_BEATS / 2 lease durations to prune it (none with
   * presence), and with --prefer once per lease duration instead. Off by default: 0.
   */
  registryPerSecond: { perCandidate: number; leaderLists: number; preferLeaderLists: number };
  warnings: string[];
}

/** HANDOVER_ROUND_TRIPS: release, the notification, the acquiring write. */
export const HANDOVER_ROUND_TRIPS = 3;
/** A pause shorter than this is common (a major GC of a big heap, a busy VM): the margin should exceed it. */
export const TYPICAL_PAUSE_MS = 1000;

/** explain computes the figures and warnings (see the file comment). */
export function explain(t: Timing, facts: StoreFacts): Explanation {
  const granularity = facts.leaseGranularityMs ?? 0;
  const lease = granularity > 0 ? Math.ceil(t.leaseDurationMs / granularity) * granularity : t.leaseDurationMs;
  const rtt = facts.rttMs?.p50 ?? 0;
  const rttMax = facts.rttMs?.max ?? rtt;
  const pollWorst = facts.notifies ? 0 : t.retryPeriodMs * (1 + t.jitterFactor);
  const sweep = facts.serverExpiry ? (facts.expirySweepMs ?? 0) : 0;
  const margin = t.leaseDurationMs - t.renewDeadlineMs;
  const warnings: string[] = [];
  if (margin < TYPICAL_PAUSE_MS) {
    warnings.push(`the safety margin (lease − renew deadline = ${margin} ms) is shorter than a typical GC or VM pause (${TYPICAL_PAUSE_MS} ms): a paused leader may still be acting when another starts — fence your writes with BATON_TERM`);
  }
  const renewals = Math.floor(t.renewDeadlineMs / t.retryPeriodMs);
  if (renewals < 3) {
    warnings.push(`the retry period (${t.retryPeriodMs} ms) is close to the renew deadline (${t.renewDeadlineMs} ms): only ${renewals} renewal attempt(s) fit before the leader steps down, so one slow round trip can cost leadership`);
  }
  if (lease !== t.leaseDurationMs) {
    warnings.push(`the store rounds the lease up to ${lease} ms (whole ${granularity} ms): failover is slower than the ${t.leaseDurationMs} ms asked for`);
  }
  if (facts.rttMs && facts.rttMs.max * 3 > t.renewDeadlineMs - t.retryPeriodMs) {
    warnings.push(`the store's round trip (up to ${round(facts.rttMs.max)} ms seen) is large against the renew deadline: renewals may not land in time`);
  }
  return {
    timing: { ...t, effectiveLeaseDurationMs: lease },
    crashFailoverMs: { best: Math.max(0, lease - t.retryPeriodMs) + rtt + sweep, worst: lease + sweep + pollWorst + rttMax },
    gracefulHandoverMs: facts.rttMs ? { typical: round(HANDOVER_ROUND_TRIPS * rtt + (facts.notifies ? 0 : (t.retryPeriodMs * (1 + t.jitterFactor / 2)))), worst: round(HANDOVER_ROUND_TRIPS * rttMax + pollWorst) } : null,
    safetyMarginMs: margin,
    driftTolerance: margin / t.leaseDurationMs,
    renewalsBeforeStepDown: renewals,
    requestsPerSecond: {
      leader: 1000 / t.retryPeriodMs,
      // A polling standby reads once per jittered retry period (mean 1 + jitter/2 periods).
      standby: facts.notifies ? 0 : 1000 / (t.retryPeriodMs * (1 + t.jitterFactor / 2)),
    },
    registryPerSecond: {
      perCandidate: facts.presence ? 0 : 1000 / t.leaseDurationMs,
      leaderLists: facts.presence ? 0 : 1000 / ((PRUNE_AFTER_BEATS / 2) * t.leaseDurationMs),
      preferLeaderLists: 1000 / t.leaseDurationMs,
    },
    warnings,
  };
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}
