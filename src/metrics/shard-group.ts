/**
 * Prometheus metrics for one member of a shard group (`baton shards --listen`), fed by the
 * group's events and in-memory state, never a store round trip at scrape time. Each shard is an
 * ordinary lease, `<group>/shard/<i>`, so it is reported under the same families and labels as
 * a lock `baton serve` campaigns for (instrument.ts): dashboards and alerts written for one
 * work for the other.
 */
import { Gauge, Registry, register as globalRegistry } from 'prom-client';
import { shardLock, type ShardAcquiredEvent, type ShardGroup, type ShardReleasedEvent } from '../shards/group.js';
import { addLeaseSource, type LeaseRow } from './instrument.js';

/** ShardGroupInstrumentation is returned by instrumentShardGroup; `close` detaches and drops the series. */
export interface ShardGroupInstrumentation {
  readonly registry: Registry;
  close(): void;
}

const EXCLUSION = 'baton_shard_exclusion_seconds';

/**
 * instrumentShardGroup registers, for every shard of `group` (label `lock` = the shard's lock,
 * `name` for client-go's gauge), in `options.registry` (default: prom-client's global registry):
 *
 * - `baton_is_leader{lock}` / `leader_election_master_status{name}` 1 while this member owns
 *   the shard (by its own deadline), else 0;
 * - `baton_term{lock}` the shard's term as this member last saw it (0 before any);
 * - `baton_step_downs_total{lock,reason}` this member's ownerships of the shard that ended, by
 *   reason (`hung`: its work was found hung, given up with giveUpHung; `rebalanced`: moved by
 *   the assignment; the elector's reasons otherwise). `hung` is 0 for every shard from the start;
 * - `baton_last_step_down_info{lock,reason,note}` 1: how this member's last ownership of the
 *   shard ended, with the note the ledger keeps for a hung one;
 * - `baton_shard_exclusion_seconds{lock}` how long this member still keeps away from the shard
 *   after its work hung here (the back-off); 0 when it does not.
 *
 * The count of step-downs outlives the shard's elector (which the group replaces as the shard
 * moves away and back): it covers the member's whole run.
 */
export function instrumentShardGroup(group: ShardGroup, options: { registry?: Registry } = {}): ShardGroupInstrumentation {
  const registry = options.registry ?? (globalRegistry as Registry);
  const locks = Array.from({ length: group.shards }, (_, s) => shardLock(group.group, s));
  /** The last term this member saw of each shard, for a shard it has no elector for now. */
  const lastTerm = new Map<number, number>();
  const rows = function* (): Iterable<LeaseRow> {
    const owned = new Set(group.ownedShards());
    for (let s = 0; s < group.shards; s++) {
      const seen = group.electorOf(s)?.leader()?.term;
      if (seen !== undefined) lastTerm.set(s, seen);
      yield { lock: locks[s]!, leading: owned.has(s), term: lastTerm.get(s) ?? 0 };
    }
  };
  const source = addLeaseSource(registry, locks, rows);
  const { gauge: exclusion, collectors } = exclusionGauge(registry);
  const collect = () => {
    const left = group.excludedShards();
    for (let s = 0; s < group.shards; s++) exclusion.set({ lock: locks[s]! }, (left.get(s) ?? 0) / 1000);
  };
  collectors.add(collect);
  const onAcquired = (e: ShardAcquiredEvent) => lastTerm.set(e.shard, e.term);
  const onReleased = (e: ShardReleasedEvent) => {
    lastTerm.set(e.shard, e.term);
    source.stepDown(locks[e.shard]!, e.reason, e.note);
  };
  group.on('acquired', onAcquired);
  group.on('released', onReleased);
  let closed = false;
  return {
    registry,
    close() {
      if (closed) return;
      closed = true;
      group.off('acquired', onAcquired);
      group.off('released', onReleased);
      source.close();
      collectors.delete(collect);
      for (const lock of locks) exclusion.remove({ lock });
    },
  };
}

/** The exclusion gauge of each registry, with the members it reads at a scrape. */
const exclusionGauges = new WeakMap<Registry, { gauge: Gauge<'lock'>; collectors: Set<() => void> }>();

function exclusionGauge(registry: Registry): { gauge: Gauge<'lock'>; collectors: Set<() => void> } {
  const known = exclusionGauges.get(registry);
  if (known) return known;
  const collectors = new Set<() => void>();
  const gauge = new Gauge({
    name: EXCLUSION,
    help: 'Seconds this member still keeps away from the shard after its work hung here (the back-off); 0 when it does not.',
    labelNames: ['lock'],
    registers: [registry],
    collect() {
      for (const c of collectors) c();
    },
  });
  const made = { gauge, collectors };
  exclusionGauges.set(registry, made);
  return made;
}
