/**
 * Prometheus metrics for a LeaderElector, fed only by its events and in-memory state (never a
 * store round trip at scrape time). Every series carries a `lock` label; one elector per lock
 * per registry.
 */
import { Counter, Gauge, Histogram, Registry, register as globalRegistry } from 'prom-client';
import { realClock, type Clock } from '../core/clock.js';
import type { LeaderElector, LeaderEvent, RenewedEvent, StoppedEvent } from '../core/elector.js';
import { OwnLeaseWatch } from './own-lease.js';

/** InstrumentOptions: where to register, and the elector's clock (real by default). */
export interface InstrumentOptions {
  /** Registry to register the metrics in. Default: prom-client's global `register`. */
  registry?: Registry;
  /** The elector's clock, used for the renew age. Default: the real clock. */
  clock?: Clock;
}

/** ElectorInstrumentation is returned by instrumentElector; `close` detaches and drops the series. */
export interface ElectorInstrumentation {
  readonly registry: Registry;
  close(): void;
}

/** RENEW_BUCKETS_SECONDS: renewals are usually a few ms; the tail shows a struggling store. */
export const RENEW_BUCKETS_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface Tracked {
  readonly elector: LeaderElector;
  readonly own: OwnLeaseWatch;
}

interface Families {
  readonly tracked: Map<LeaderElector, { handle: ElectorInstrumentation; t: Tracked }>;
  readonly transitions: Counter<'lock'>;
  readonly storeErrors: Counter<'lock'>;
  readonly stepDowns: Counter<'lock' | 'reason'>;
  readonly renewDuration: Histogram<'lock'>;
}

const families = new WeakMap<Registry, Families>();

/**
 * instrumentElector registers baton's metrics in `options.registry` (default: prom-client's
 * global registry) and keeps them in step with `elector`:
 *
 * - `baton_is_leader{lock}` 1 while this candidate leads (by its own monotonic deadline), else 0.
 * - `baton_term{lock}` the fencing token of the lease as this candidate last saw it (its own
 *   while it leads); 0 before any.
 * - `baton_leader_transitions_total{lock}` changes of leader this candidate has seen (a new
 *   holder or term), not counting the lease it found when it started.
 * - `baton_renew_duration_seconds{lock}` histogram of successful renewal round trips.
 * - `baton_last_renew_age_seconds{lock}` seconds since this candidate last confirmed its lease,
 *   present only while the lease it last saw names it.
 * - `baton_store_errors_total{lock}` store failures the elector reported.
 * - `baton_step_downs_total{lock,reason}` leaderships of this candidate that ended, by the
 *   `stopped` event's reason ('hung': the work stopped reporting progress, docs/watchdog.md).
 * - `leader_election_master_status{name}` client-go's gauge under its own name and label, so
 *   dashboards and alerts written for Kubernetes controllers work unchanged: 1 while this
 *   process leads the lock `name`, 0 while it is a standby (the same reading as
 *   `baton_is_leader`). client-go's `leader_election_slowpath_total` is not exposed: it counts
 *   leader renewals that had to re-read the lease first, and a baton leader always renews with
 *   one compare-and-set on the revision it holds (a refusal ends or adopts the term instead).
 *
 * Calling it again for the same elector and registry returns the existing instrumentation.
 */
export function instrumentElector(elector: LeaderElector, options: InstrumentOptions = {}): ElectorInstrumentation {
  const registry = options.registry ?? (globalRegistry as Registry);
  const f = familiesFor(registry);
  const existing = f.tracked.get(elector);
  if (existing) return existing.handle;

  const labels = { lock: elector.lock };
  const own = new OwnLeaseWatch(elector, options.clock ?? realClock);
  f.transitions.inc(labels, 0);
  f.storeErrors.inc(labels, 0);
  f.renewDuration.zero(labels);

  // The lease found at start-up is not a change; a first sight of our own acquisition is.
  let seen = elector.leader() !== null;
  let lastHeld = heldKey(elector.leader());
  const onLeader = (e: LeaderEvent) => {
    const first = !seen;
    seen = true;
    const key = heldKey(e);
    if (key === undefined || key === lastHeld) return;
    lastHeld = key;
    if (!first || e.isSelf) f.transitions.inc(labels);
  };
  const onRenewed = (e: RenewedEvent) => f.renewDuration.observe(labels, e.durationMs / 1000);
  const onStoreError = () => f.storeErrors.inc(labels);
  const reasons = new Set<string>(['hung']);
  f.stepDowns.inc({ ...labels, reason: 'hung' }, 0);
  const onStopped = (e: StoppedEvent) => {
    reasons.add(e.reason);
    f.stepDowns.inc({ ...labels, reason: e.reason });
  };
  elector.on('leader', onLeader);
  elector.on('stopped', onStopped);
  elector.on('renewed', onRenewed);
  elector.on('storeError', onStoreError);

  const handle: ElectorInstrumentation = {
    registry,
    close() {
      if (f.tracked.get(elector)?.handle !== handle) return;
      f.tracked.delete(elector);
      elector.off('leader', onLeader);
      elector.off('renewed', onRenewed);
      elector.off('storeError', onStoreError);
      elector.off('stopped', onStopped);
      for (const reason of reasons) f.stepDowns.remove({ ...labels, reason });
      own.close();
      for (const name of ALL_NAMES) (registry.getSingleMetric(name) as Gauge<'lock'> | undefined)?.remove(labels);
      (registry.getSingleMetric(CLIENT_GO_STATUS) as Gauge<'name'> | undefined)?.remove({ name: elector.lock });
    },
  };
  f.tracked.set(elector, { handle, t: { elector, own } });
  return handle;
}

const ALL_NAMES = [
  'baton_is_leader',
  'baton_term',
  'baton_leader_transitions_total',
  'baton_renew_duration_seconds',
  'baton_last_renew_age_seconds',
  'baton_store_errors_total',
];

/** CLIENT_GO_STATUS is client-go's leader gauge (k8s.io/component-base's leaderelection metrics). */
const CLIENT_GO_STATUS = 'leader_election_master_status';

/** heldKey names a held lease (holder and term); undefined for none or a free lease. */
function heldKey(e: Pick<LeaderEvent, 'holder' | 'term'> | null): string | undefined {
  return e && e.holder !== null ? `${e.holder}\u0000${e.term}` : undefined;
}

function familiesFor(registry: Registry): Families {
  const known = families.get(registry);
  if (known) return known;
  const tracked: Families['tracked'] = new Map();
  const each = (fn: (t: Tracked) => void) => {
    for (const { t } of tracked.values()) fn(t);
  };
  const registers = [registry];
  new Gauge({
    name: 'baton_is_leader',
    help: '1 while this instance leads the lock (by its own monotonic deadline), else 0.',
    labelNames: ['lock'],
    registers,
    collect() {
      each((t) => this.set({ lock: t.elector.lock }, t.elector.isLeader() ? 1 : 0));
    },
  });
  new Gauge({
    name: CLIENT_GO_STATUS,
    help: "client-go's leader gauge: 1 while this instance leads the lock 'name', 0 while it is a standby. Group by name.",
    labelNames: ['name'],
    registers,
    collect() {
      each((t) => this.set({ name: t.elector.lock }, t.elector.isLeader() ? 1 : 0));
    },
  });
  new Gauge({
    name: 'baton_term',
    help: 'Fencing token (term) of the lease as this instance last saw it; 0 before any.',
    labelNames: ['lock'],
    registers,
    collect() {
      each((t) => this.set({ lock: t.elector.lock }, t.elector.leader()?.term ?? 0));
    },
  });
  new Gauge({
    name: 'baton_last_renew_age_seconds',
    help: 'Seconds since this instance last confirmed its lease; present only while the lease it last saw names it.',
    labelNames: ['lock'],
    registers,
    collect() {
      each((t) => {
        const age = t.own.ageMs();
        if (age === undefined) this.remove({ lock: t.elector.lock });
        else this.set({ lock: t.elector.lock }, age / 1000);
      });
    },
  });
  const f: Families = {
    tracked,
    transitions: new Counter({
      name: 'baton_leader_transitions_total',
      help: 'Changes of leader (new holder or term) this instance has seen since it started.',
      labelNames: ['lock'],
      registers,
    }),
    storeErrors: new Counter({
      name: 'baton_store_errors_total',
      help: 'Store failures reported by the elector (unreachable, timed out, refused).',
      labelNames: ['lock'],
      registers,
    }),
    stepDowns: new Counter({
      name: 'baton_step_downs_total',
      help: 'Leaderships of this instance that ended, by reason (hung: the work stopped reporting progress).',
      labelNames: ['lock', 'reason'],
      registers,
    }),
    renewDuration: new Histogram({
      name: 'baton_renew_duration_seconds',
      help: 'Duration of successful lease renewals, in seconds.',
      labelNames: ['lock'],
      buckets: RENEW_BUCKETS_SECONDS,
      registers,
    }),
  };
  families.set(registry, f);
  return f;
}
