/**
 * A member given hundreds of shards at once must not flood its store client: its shard electors'
 * reads and acquiring writes go through at most 16 at a time (src/shards/gate.ts), so renewals of
 * the shards it already holds are not queued behind them. Here a lone member takes 200 shards of a
 * store that answers each call after 5 ms; the test counts the reads and acquisitions in flight.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ShardGroup } from '../../src/shards/group.js';
import { MemoryBackend, MemoryStore } from '../../src/stores/memory/index.js';
import type { LeaseStore } from '../../src/core/store.js';

/** slowCounting wraps a store: every call takes 5 ms more, and reads + acquiring writes in flight are counted. */
function slowCounting(inner: LeaseStore) {
  const stats = { inFlight: 0, maxInFlight: 0 };
  const later = <T>(p: () => Promise<T>) => new Promise<void>((r) => setTimeout(r, 5)).then(p);
  const limited = async <T>(p: () => Promise<T>) => {
    stats.inFlight++;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    try {
      return await later(p);
    } finally {
      stats.inFlight--;
    }
  };
  const store: LeaseStore = {
    kind: inner.kind,
    capabilities: inner.capabilities,
    ledger: inner.ledger,
    watch: inner.watch?.bind(inner),
    read: (lock) => limited(() => inner.read(lock)),
    write: (lock, expected, next) => {
      if (next.newTerm) return limited(() => inner.write(lock, expected, next));
      return later(() => inner.write(lock, expected, next));
    },
    close: () => inner.close(),
  };
  return { store, stats };
}

test('a lone member taking 200 shards keeps at most 16 reads and acquisitions in flight, and loses none of them meanwhile', async () => {
  const { store, stats } = slowCounting(new MemoryStore(new MemoryBackend()));
  const g = new ShardGroup({ store, group: 'wide', shards: 200, identity: 'solo', leaseDurationMs: 1000, renewDeadlineMs: 600, retryPeriodMs: 100 });
  let lost = 0;
  g.on('released', () => lost++);
  g.start();
  try {
    const until = Date.now() + 20_000;
    while (g.ownedShards().length < 200 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    assert.equal(g.ownedShards().length, 200);
    assert.ok(stats.maxInFlight <= 16, `${stats.maxInFlight} reads and acquisitions were in flight at once`);
    assert.ok(stats.maxInFlight >= 8, `the slots were hardly used (${stats.maxInFlight})`);
    assert.equal(lost, 0, 'a shard was lost while the others were being acquired');
  } finally {
    await g.stop();
  }
});
