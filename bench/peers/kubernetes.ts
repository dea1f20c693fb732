/**
 * A Kubernetes-style polling elector (client-go `tools/leaderelection` with a Lease lock) cannot
 * run here: there is no API server. Its figures are computed from its defaults and its loop,
 * and are labelled computed, not measured.
 *
 * client-go runs `tryAcquireOrRenew` through `wait.JitterUntil(…, RetryPeriod, JitterFactor
 * 1.2, sliding)`: a standby polls every RetryPeriod × (1 + U[0,1) × 1.2) = U[2 s, 4.4 s),
 * 3.2 s on average, and each poll while another candidate holds a live lease is one GET of the
 * Lease object — so 1 / 3.2 s = 0.3125 requests/s per standby. Expiry is counted from when the
 * standby *observed* the holder's last renewal (its own poll), for LeaseDuration 15 s.
 */
import { summarize } from '../stats.js';
import type { ResultRow } from '../results.js';

const LEASE_S = 15;
const RENEW_DEADLINE_S = 10;
const RETRY_S = 2;
const JITTER = 1.2;

/** Poll intervals are uniform on [RETRY, RETRY × (1 + JITTER)). */
const LO = RETRY_S;
const HI = RETRY_S * (1 + JITTER);

/** seeded is a small deterministic PRNG (mulberry32), so the computed figures never change. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * kubernetesRows returns the computed rows: idle load (analytic), graceful handover with
 * ReleaseOnCancel (the waiting standby's next poll: the residual of a U[2 s, 4.4 s) poll
 * interval), and crash failover (simulated: the standby sees the last renewal at its next poll,
 * counts 15 s from there, and takes over at its first poll after that).
 */
export function kubernetesRows(): ResultRow[] {
  const rand = seeded(42);
  const poll = () => LO + rand() * (HI - LO);
  const handover: number[] = [];
  const crash: number[] = [];
  for (let i = 0; i < 100_000; i++) {
    // A release lands at a uniformly random moment of the standby's polling: length-biased pick.
    let d = poll();
    while (rand() * HI > d) d = poll();
    handover.push(rand() * d * 1000);
    // Crash: the holder renewed every RETRY_S; the kill lands U[0, RETRY_S) after its last renewal.
    const sinceRenewal = rand() * RETRY_S;
    let d2 = poll();
    while (rand() * HI > d2) d2 = poll();
    const seenAt = rand() * d2; // the standby's first poll after the last renewal
    let t = seenAt;
    while (t < seenAt + LEASE_S) t += poll();
    crash.push((t - sinceRenewal) * 1000);
  }
  const h = summarize(handover);
  const c = summarize(crash);
  const settings = `client-go defaults: LeaseDuration ${LEASE_S} s, RenewDeadline ${RENEW_DEADLINE_S} s, RetryPeriod ${RETRY_S} s, JitterFactor ${JITTER}`;
  const common = { system: 'kubernetes-client-go', store: 'kubernetes', computed: true, settings } as const;
  return [
    {
      ...common,
      metric: 'idle_standby_rps',
      unit: 'requests/s',
      value: Math.round((1 / ((LO + HI) / 2)) * 10_000) / 10_000,
      method: 'computed: one GET per poll; polls every RetryPeriod × (1 + U[0,1) × 1.2) = 3.2 s on average → 1/3.2',
    },
    {
      ...common,
      metric: 'graceful_handover_ms',
      unit: 'ms',
      n: h.n,
      p50: Math.round(h.p50),
      p99: Math.round(h.p99),
      max: Math.round(h.max),
      method: 'computed: ReleaseOnCancel, the standby acquires at its next poll (residual of a U[2 s, 4.4 s) interval); RTTs ignored',
    },
    {
      ...common,
      metric: 'crash_failover_ms',
      unit: 'ms',
      n: c.n,
      p50: Math.round(c.p50),
      p99: Math.round(c.p99),
      max: Math.round(c.max),
      method: 'computed (simulated): expiry counted from the standby’s own sight of the last renewal, taken over at its next poll',
    },
  ];
}
