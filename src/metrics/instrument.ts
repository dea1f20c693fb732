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

/** LeaseRow is one lease a lease source (a shard group's member, metrics/shard-group.ts) reports at scrape time. */
export interface LeaseRow {
  readonly lock: string;
  /** This process leads it now (by its own monotonic deadline). */
  readonly leading: boolean;
  /** Its term as this process last saw it; 0 before any. */
  readonly term: number;
}

/** LeaseSource is a lease source's handle on a registry's families (see addLeaseSource). */
export interface LeaseSource {
  /** stepDown counts a leadership of `lock` that ended, and makes it the lock's last step-down. */
  stepDown(lock: string, reason: string, note?: string): void;
  /** close stops reporting and drops the series of the source's locks. */
  close(): void;
}

interface Families {
  readonly tracked: Map<LeaderElector, { handle: ElectorInstrumentation; t: Tracked }>;
  /** Lease sources other than electors, read by the leader and term gauges at scrape time. */
  readonly sources: Set<() => Iterable<LeaseRow>>;
  readonly transitions: Counter<'lock'>;
  readonly storeErrors: Counter<'lock'>;
  readonly stepDowns: Counter<'lock' | 'reason'>;
  readonly lastStepDown: Gauge<'lock' | 'reason' | 'note'>;
  /** The labels of each lock's one `baton_last_step_down_info` series, so a newer one replaces it. */
  readonly lastStepDownLabels: Map<string, { reason: string; note: string }>;
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
 * - `baton_last_step_down_info{lock,reason,note}` 1, one series per lock: how this candidate's
 *   last leadership of the lock ended — the reason, and the `stopped` event's note ('' without
 *   one; e.g. why the work was found hung). Absent until a leadership has ended.
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
    setLastStepDown(f, elector.lock, e.reason, e.note);
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
      dropLastStepDown(f, elector.lock);
      own.close();
      for (const name of ALL_NAMES) (registry.getSingleMetric(name) as Gauge<'lock'> | undefined)?.remove(labels);
      (registry.getSingleMetric(CLIENT_GO_STATUS) as Gauge<'name'> | undefined)?.remove({ name: elector.lock });
    },
  };
  f.tracked.set(elector, { handle, t: { elector, own } });
  return handle;
}

/**
 * addLeaseSource reports leases that no single elector stands for — a shard group member's
 * shards, whose electors come and go (metrics/shard-group.ts) — in `registry`'s families, beside
 * any instrumented elector: `rows` is read at each scrape for `baton_is_leader`,
 * `leader_election_master_status` and `baton_term`; `stepDown` feeds `baton_step_downs_total` and
 * `baton_last_step_down_info`. `locks` are every lock the source may report: their hung
 * step-downs start at 0, and `close` drops their series.
 */
export function addLeaseSource(registry: Registry, locks: readonly string[], rows: () => Iterable<LeaseRow>): LeaseSource {
  const f = familiesFor(registry);
  const reasons = new Map(locks.map((lock): [string, Set<string>] => [lock, new Set(['hung'])]));
  for (const lock of locks) f.stepDowns.inc({ lock, reason: 'hung' }, 0);
  f.sources.add(rows);
  let closed = false;
  return {
    stepDown(lock, reason, note) {
      if (closed) return;
      let seen = reasons.get(lock);
      if (!seen) reasons.set(lock, (seen = new Set()));
      seen.add(reason);
      f.stepDowns.inc({ lock, reason });
      setLastStepDown(f, lock, reason, note);
    },
    close() {
      if (closed) return;
      closed = true;
      f.sources.delete(rows);
      for (const [lock, seen] of reasons) {
        for (const reason of seen) f.stepDowns.remove({ lock, reason });
        dropLastStepDown(f, lock);
        for (const name of ['baton_is_leader', 'baton_term']) (registry.getSingleMetric(name) as Gauge<'lock'> | undefined)?.remove({ lock });
        (registry.getSingleMetric(CLIENT_GO_STATUS) as Gauge<'name'> | undefined)?.remove({ name: lock });
      }
    },
  };
}

/** NOTE_LABEL_MAX: a step-down note is cut to this many characters in a label. */
const NOTE_LABEL_MAX = 200;

/** setLastStepDown makes (reason, note) the one `baton_last_step_down_info` series of `lock`. */
function setLastStepDown(f: Families, lock: string, reason: string, note: string | undefined): void {
  dropLastStepDown(f, lock);
  const labels = { reason, note: (note ?? '').slice(0, NOTE_LABEL_MAX) };
  f.lastStepDownLabels.set(lock, labels);
  f.lastStepDown.set({ lock, ...labels }, 1);
}

function dropLastStepDown(f: Families, lock: string): void {
  const last = f.lastStepDownLabels.get(lock);
  if (!last) return;
  f.lastStepDownLabels.delete(lock);
  f.lastStepDown.remove({ lock, ...last });
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
  const sources: Families['sources'] = new Set();
  const each = (fn: (t: Tracked) => void) => {
    for (const { t } of tracked.values()) fn(t);
  };
  const eachRow = (fn: (row: LeaseRow) => void) => {
    for (const rows of sources) for (const row of rows()) fn(row);
  };
  const registers = [registry];
  new Gauge({
    name: 'baton_is_leader',
    help: '1 while this instance leads the lock (by its own monotonic deadline), else 0.',
    labelNames: ['lock'],
    registers,
    collect() {
      each((t) => this.set({ lock: t.elector.lock }, t.elector.isLeader() ? 1 : 0));
      eachRow((r) => this.set({ lock: r.lock }, r.leading ? 1 : 0));
    },
  });
  new Gauge({
    name: CLIENT_GO_STATUS,
    help: "client-go's leader gauge: 1 while this instance leads the lock 'name', 0 while it is a standby. Group by name.",
    labelNames: ['name'],
    registers,
    collect() {
      each((t) => this.set({ name: t.elector.lock }, t.elector.isLeader() ? 1 : 0));
      eachRow((r) => this.set({ name: r.lock }, r.leading ? 1 : 0));
    },
  });
  new Gauge({
    name: 'baton_term',
    help: 'Fencing token (term) of the lease as this instance last saw it; 0 before any.',
    labelNames: ['lock'],
    registers,
    collect() {
      each((t) => this.set({ lock: t.elector.lock }, t.elector.leader()?.term ?? 0));
      eachRow((r) => this.set({ lock: r.lock }, r.term));
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
    sources,
    lastStepDownLabels: new Map(),
    lastStepDown: new Gauge({
      name: 'baton_last_step_down_info',
      help: "1 for how this instance's last leadership of the lock ended: the reason, and the note said with it ('' for none). One series per lock.",
      labelNames: ['lock', 'reason', 'note'],
      registers,
    }),
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
