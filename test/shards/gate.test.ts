/**
 * A member given hundreds of shards at once must not flood its store client (src/shards/gate.ts):
 * at most 8 reads and 4 acquiring writes of its shard electors are in flight, and an acquisition
 * never waits in the gate — an elector times a lease from when it called write, so one that
 * queued there came back past its renew deadline and was never led on (on PostgreSQL under load,
 * nearly every acquisition of a 1,000-shard group, for minutes).
 *
 * The store here behaves like a pool of 4 connections: every call, renewals included, takes one
 * of 4 lanes for 30 ms, first come first served. The tests count calls and events, not times.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ShardGroup } from '../../src/shards/group.js';
import { MemoryBackend, MemoryStore } from '../../src/stores/memory/index.js';
import type { LeaseStore } from '../../src/core/store.js';

/** pooled wraps a store: every call waits for one of `lanes` lanes and holds it `ms`; reads and acquisitions in flight and won acquisitions are counted. */
function pooled(inner: LeaseStore, lanes = 4, ms = 30) {
  const stats = { inFlight: 0, maxInFlight: 0, acquisitionsWon: 0 };
  let busy = 0;
  const waiting: (() => void)[] = [];
  const lane = async <T>(call: () => Promise<T>): Promise<T> => {
    if (busy >= lanes) await new Promise<void>((r) => waiting.push(r));
    else busy++;
    try {
      await new Promise((r) => setTimeout(r, ms));
      return await call();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else busy--;
    }
  };
  const counted = async <T>(call: () => Promise<T>): Promise<T> => {
    stats.inFlight++;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    try {
      return await lane(call);
    } finally {
      stats.inFlight--;
    }
  };
  const store: LeaseStore = {
    kind: inner.kind,
    capabilities: inner.capabilities,
    watch: inner.watch?.bind(inner),
    renewMany: (requests) => lane(() => inner.renewMany!(requests)),
    ledger: {
      get: (key) => lane(() => inner.ledger!.get(key)),
      put: (key, expected, value) => lane(() => inner.ledger!.put(key, expected, value)),
      list: (prefix, limit) => lane(() => inner.ledger!.list(prefix, limit)),
    },
    read: (lock) => counted(() => inner.read(lock)),
    write: (lock, expected, next) => {
      if (!next.newTerm) return lane(() => inner.write(lock, expected, next));
      return counted(async () => {
        const result = await inner.write(lock, expected, next);
        if (result.ok) stats.acquisitionsWon++;
        return result;
      });
    },
    close: () => inner.close(),
  };
  return { store, stats };
}

test('a lone member taking 300 shards through a 4-lane store leads on every acquisition it wins and loses none', async () => {
  const { store, stats } = pooled(new MemoryStore(new MemoryBackend()));
  const g = new ShardGroup({ store, group: 'wide', shards: 300, identity: 'solo', leaseDurationMs: 2500, renewDeadlineMs: 1500, retryPeriodMs: 300 });
  let acquired = 0;
  let released = 0;
  g.on('acquired', () => acquired++);
  g.on('released', () => released++);
  g.start();
  try {
    const until = Date.now() + 60_000;
    while (g.ownedShards().length < 300 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    assert.equal(g.ownedShards().length, 300);
    // An acquisition the store granted but answered past its deadline is won and never led on.
    assert.equal(stats.acquisitionsWon, acquired, `${stats.acquisitionsWon - acquired} acquisitions were won but answered too late to lead on`);
    assert.equal(released, 0, 'a shard was lost while the others were being acquired');
    assert.ok(stats.maxInFlight <= 12, `${stats.maxInFlight} reads and acquisitions were in flight at once (8 + 4 allowed)`);
    assert.ok(stats.maxInFlight >= 6, `the slots were hardly used (${stats.maxInFlight})`);
  } finally {
    await g.stop();
  }
});

test('the gate reads the feed state live from the store it wraps', async () => {
  const { GatedStore } = await import('../../src/shards/gate.js');
  const inner = new MemoryStore();
  const feed = { live: true, expiry: true, renewals: true };
  Object.defineProperty(inner, 'watchLive', { get: () => feed.live });
  Object.defineProperty(inner, 'watchSeesExpiry', { get: () => feed.expiry });
  Object.defineProperty(inner, 'watchSeesRenewals', { get: () => feed.renewals });
  const gated: LeaseStore = new GatedStore(inner, () => true);
  assert.deepEqual([gated.watchLive, gated.watchSeesExpiry, gated.watchSeesRenewals], [true, true, true]);
  Object.assign(feed, { live: false, expiry: false, renewals: false });
  assert.deepEqual([gated.watchLive, gated.watchSeesExpiry, gated.watchSeesRenewals], [false, false, false]);
  await inner.close();
});
