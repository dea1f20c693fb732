/**
 * Liveness and readiness for the sidecar, in the spirit of client-go's leader-election healthz
 * adaptor: unhealthy only when this instance's lease has gone unconfirmed past its renew
 * deadline plus a grace — a leader that cannot reach its store, or whose timers have stalled.
 * A standby is healthy even when the store is down: restarting it would not help.
 */
import type { LeaderElector } from '../core/elector.js';
import { formatDuration } from '../core/duration.js';
import type { OwnLeaseWatch } from '../metrics/own-lease.js';

/** HealthStatus is the body of /healthz and /readyz. */
export type HealthStatus = { ok: true; status: 'ok' } | { ok: false; status: 'unhealthy' | 'not ready'; reason: string };

/**
 * checkHealth fails when the lease this instance last saw still names it but was last
 * confirmed more than renewDeadline + `graceMs` ago. The elector has stepped down by then (or
 * its timers are stuck); either way the operator should look.
 */
export function checkHealth(elector: LeaderElector, own: OwnLeaseWatch, graceMs: number): HealthStatus {
  const age = own.ageMs();
  const limit = elector.timing.renewDeadlineMs + graceMs;
  if (age === undefined || age <= limit) return { ok: true, status: 'ok' };
  const leading = elector.leadershipWindow() ? 'leads' : 'led';
  return {
    ok: false,
    status: 'unhealthy',
    reason:
      `this instance ${leading} "${elector.lock}" but has not renewed its lease for ${formatDuration(age)} ` +
      `(renew deadline ${formatDuration(elector.timing.renewDeadlineMs)} + grace ${formatDuration(graceMs)})`,
  };
}

/** checkReady passes once the elector has reached the store at least once. */
export function checkReady(reached: boolean): HealthStatus {
  return reached ? { ok: true, status: 'ok' } : { ok: false, status: 'not ready', reason: 'the elector has not reached the store yet' };
}
