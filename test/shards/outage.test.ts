/**
 * A shard group after a store outage longer than a lease, on a fake clock: every lease ran out
 * while the store refused writes (reads went on, as on SQLite in WAL mode), so every shard must be
 * acquired again. Each elector's own retry after its last failed write is up to
 * retryPeriod × (1 + jitterFactor) away; the group wakes them all as soon as its heartbeat is
 * taken again, so the shards are owned again within the group's next retry period instead.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StoreUnavailableError } from '../../src/core/errors.js';
import type { LeaseStore } from '../../src/core/store.js';
import { ShardGroup } from '../../src/shards/group.js';
import { MemoryBackend, MemoryStore } from '../../src/stores/memory/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';

const TIMING = { leaseDurationMs: 1000, renewDeadlineMs: 600, retryPeriodMs: 250 };

/** refusing wraps a store: while `down`, every write (leases and ledger) fails as unavailable. */
function refusing(inner: LeaseStore) {
  const state = { down: false };
  const check = () => {
    if (state.down) throw new StoreUnavailableError('test: the store refuses writes');
  };
  const ledger = inner.ledger!;
  const store: LeaseStore = {
    kind: inner.kind,
    capabilities: inner.capabilities,
    watch: inner.watch?.bind(inner),
    read: (lock) => inner.read(lock),
    write: async (lock, expected, next) => (check(), inner.write(lock, expected, next)),
    renewMany: async (requests) => (check(), inner.renewMany!(requests)),
    ledger: { get: (key) => ledger.get(key), list: (prefix, limit) => ledger.list(prefix, limit), put: async (key, expected, value) => (check(), ledger.put(key, expected, value)) },
    close: () => inner.close(),
  };
  return { store, state };
}

test('after a store outage longer than a lease, every shard is owned again within a retry period of the store taking writes', async () => {
  const clock = new FakeClock();
  const { store, state } = refusing(new MemoryStore(new MemoryBackend()));
  const g = new ShardGroup({ store, group: 'out', shards: 8, identity: 'solo', clock, ...TIMING });
  g.start();
  try {
    for (let t = 0; g.ownedShards().length < 8 && t < 5_000; t += 10) await clock.advance(10);
    assert.equal(g.ownedShards().length, 8);
    state.down = true;
    await clock.advance(3 * TIMING.leaseDurationMs);
    assert.equal(g.ownedShards().length, 0, 'every lease ran out during the outage');
    state.down = false;
    let waited = 0;
    while (g.ownedShards().length < 8 && waited < 5_000) {
      await clock.advance(10);
      waited += 10;
    }
    assert.equal(g.ownedShards().length, 8);
    // The group's next tick is at most a retry period away; the electors' own retries could be
    // up to 550 ms away (one of 8 nearly always is). One extra step of the fake clock.
    assert.ok(waited <= TIMING.retryPeriodMs + 10, `owned again ${waited} ms after the store took writes`);
  } finally {
    await g.stop();
  }
});
