/**
 * What a chaos candidate leads, and what it may write while it does: one LeaderElector for the
 * run's lock (an ordinary run), or one ShardGroup member whose every owned shard is a
 * leadership of its own (shard mode, `--shards N`). Both log their leaderships the same way
 * (elected / renewed / stopped, with the deadline the elector computed), shard events tagged with
 * their shard, so the checker judges each shard as it judges the single lock.
 */
import { LeaderElector } from '../src/core/elector.js';
import type { LeaseStore } from '../src/core/store.js';
import { ShardGroup } from '../src/shards/group.js';
import { PERF_TO_MONO_MS, monoMs } from './clock.js';
import type { CandidateEvent } from './events.js';

/** Writable is one register this process may write now, with its fencing token. */
export interface Writable {
  /** The register key (`s<shard>` in shard mode; absent for the single register). */
  key?: string;
  term: number;
}

/** Leading is a started leadership source. */
export interface Leading {
  start(): void;
  stop(): Promise<void>;
  /** writable lists, synchronously, what isLeader() says may be written this instant. */
  writable(): Writable[];
}

/** LeadingOptions are a candidate's store, names and timing. */
export interface LeadingOptions {
  store: LeaseStore;
  lock: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** Register in the candidate registry (LeaderElectorOptions.candidate), with this priority and preference rule. */
  register?: boolean;
  priority?: number;
  prefer?: 'priority';
  emit(e: CandidateEvent): void;
  onStoreError(err: Error): void;
}

/** electorLeading is one LeaderElector on the run's lock. */
export function electorLeading(o: LeadingOptions): Leading {
  const elector = new LeaderElector({
    store: o.store,
    lock: o.lock,
    identity: o.identity,
    leaseDurationMs: o.leaseDurationMs,
    renewDeadlineMs: o.renewDeadlineMs,
    retryPeriodMs: o.retryPeriodMs,
    ...(o.register ? { candidate: { ...(o.priority !== undefined ? { priority: o.priority } : {}), ...(o.prefer ? { prefer: o.prefer } : {}) } } : {}),
  });
  const deadline = () => (elector.leadershipWindow()?.deadlineMs ?? NaN) + PERF_TO_MONO_MS;
  // From the event, not leadershipWindow(): a leadership won just before its deadline is already
  // over when its listeners run, and the checker still needs when it was acquired.
  elector.on('elected', ({ term, deadlineMs }) => {
    const acquireStart = deadlineMs - o.renewDeadlineMs + PERF_TO_MONO_MS;
    o.emit({ ev: 'elected', t: monoMs(), wall: Date.now(), term, acquireStart, deadline: deadlineMs + PERF_TO_MONO_MS });
  });
  elector.on('renewed', ({ term, durationMs }) => o.emit({ ev: 'renewed', t: monoMs(), term, rttMs: durationMs, deadline: deadline() }));
  elector.on('stopped', ({ term, reason }) => o.emit({ ev: 'stopped', t: monoMs(), wall: Date.now(), term, reason }));
  elector.on('leader', ({ holder, term }) => o.emit({ ev: 'leader', t: monoMs(), holder, term }));
  elector.on('storeError', o.onStoreError);
  return {
    start: () => void elector.start(),
    stop: () => elector.stop(),
    // One look: isLeader() and a second call could straddle the deadline.
    writable: () => {
      const w = elector.leadershipWindow();
      return w ? [{ term: w.term }] : [];
    },
  };
}

/** shardLeading is one member of the group `lock` with `shards` shards. */
export function shardLeading(o: LeadingOptions, shards: number): Leading {
  const group = new ShardGroup({
    store: o.store,
    group: o.lock,
    shards,
    identity: o.identity,
    leaseDurationMs: o.leaseDurationMs,
    renewDeadlineMs: o.renewDeadlineMs,
    retryPeriodMs: o.retryPeriodMs,
  });
  const deadline = (shard: number) => (group.shardWindow(shard)?.deadlineMs ?? NaN) + PERF_TO_MONO_MS;
  group.on('acquired', ({ shard, term }) => {
    const w = group.shardWindow(shard);
    o.emit({ ev: 'elected', t: monoMs(), wall: Date.now(), term, acquireStart: (w?.renewStartMs ?? NaN) + PERF_TO_MONO_MS, deadline: deadline(shard), shard });
  });
  group.on('renewed', ({ shard, term, durationMs }) => o.emit({ ev: 'renewed', t: monoMs(), term, rttMs: durationMs, deadline: deadline(shard), shard }));
  group.on('released', ({ shard, term, reason }) => o.emit({ ev: 'stopped', t: monoMs(), wall: Date.now(), term, reason, shard }));
  group.on('storeError', o.onStoreError);
  return {
    start: () => void group.start(),
    stop: () => group.stop(),
    writable() {
      const out: Writable[] = [];
      for (const shard of group.ownedShards()) {
        const w = group.shardWindow(shard);
        if (w) out.push({ key: `s${shard}`, term: w.term });
      }
      return out;
    },
  };
}
