/**
 * ShardGroup in one process over a shared memory store: balance, cooperative hand-off on a
 * join, immediate release on a clean stop, and never two owners of a shard at once (every
 * acquire/release is logged with the monotonic time and checked for overlap per shard).
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { ShardGroup } from '../../src/shards/group.js';
import { MemoryStore } from '../../src/stores/memory/index.js';
import { MemoryBackend } from '../../src/stores/memory/index.js';

const TIMING = { leaseDurationMs: 800, renewDeadlineMs: 500, retryPeriodMs: 100 };
const data = new MemoryBackend();
const groups: ShardGroup[] = [];
after(async () => {
  await Promise.all(groups.map((g) => g.stop()));
});

type Span = { member: string; shard: number; term: number; from: number; to?: number };
const spans: Span[] = [];

/** Directed handovers seen: a write by one member that names another holder with a new term. */
const gives: { from: string; to: string; lock: string }[] = [];
function recording(store: MemoryStore, writer: string): MemoryStore {
  return new Proxy(store, {
    get(target, key) {
      if (key === 'write') {
        return (lock: string, expected: string | null, next: Parameters<MemoryStore['write']>[2]) => {
          if (next.newTerm && next.holder !== null && next.holder !== writer) gives.push({ from: writer, to: next.holder, lock });
          return target.write(lock, expected, next);
        };
      }
      const v = Reflect.get(target, key, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

function member(identity: string, shards = 16): ShardGroup {
  const g = new ShardGroup({ store: recording(new MemoryStore(data), identity), group: 'orders', shards, identity, ...TIMING });
  g.on('acquired', ({ shard, term }) => spans.push({ member: identity, shard, term, from: performance.now() }));
  g.on('released', ({ shard, term }) => {
    const open = spans.find((s) => s.member === identity && s.shard === shard && s.term === term && s.to === undefined);
    if (open) open.to = performance.now();
  });
  groups.push(g);
  return g.start();
}

async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const end = performance.now() + ms;
  while (!check()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const counts = (gs: ShardGroup[]) => gs.map((g) => g.ownedShards().length).sort((a, b) => a - b);
const ownerMap = (gs: ShardGroup[]) => new Map(gs.flatMap((g) => g.ownedShards().map((s) => [s, g.identity] as const)));

function assertNoOverlap(): void {
  for (let shard = 0; shard < 16; shard++) {
    const mine = spans.filter((s) => s.shard === shard).sort((a, b) => a.from - b.from);
    for (let i = 1; i < mine.length; i++) {
      assert.ok(mine[i - 1]!.to !== undefined && mine[i - 1]!.to! <= mine[i]!.from, `shard ${shard}: ${mine[i - 1]!.member} (term ${mine[i - 1]!.term}) and ${mine[i]!.member} (term ${mine[i]!.term}) overlapped`);
      assert.ok(mine[i]!.term > mine[i - 1]!.term, `shard ${shard}: term did not grow`);
    }
  }
}

describe('ShardGroup over one store', () => {
  test('4 members, 16 shards: 4 each; a clean stop moves its 4 at once (5/5/6), nothing else moves; a rejoin takes 4 back', async () => {
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((id) => member(id));
    const all = [a!, b!, c!, d!];
    await until('4 shards each', () => counts(all).join() === '4,4,4,4');
    const before = ownerMap(all);
    await d!.stop();
    const rest = [a!, b!, c!];
    const stoppedAt = performance.now();
    await until('5/5/6 without d', () => counts(rest).join() === '5,5,6');
    // A released lease is taken on the notification, well before a lease duration.
    assert.ok(performance.now() - stoppedAt < TIMING.leaseDurationMs + 4 * TIMING.retryPeriodMs, `took ${performance.now() - stoppedAt} ms`);
    const afterStop = ownerMap(rest);
    for (const [s, owner] of before) if (owner !== 'd') assert.equal(afterStop.get(s), owner, `shard ${s} moved though ${owner} stayed`);
    const givesBefore = gives.length;
    const d2 = member('d');
    const again = [a!, b!, c!, d2];
    await until('4 each again', () => counts(again).join() === '4,4,4,4');
    const rejoined = ownerMap(again);
    let moved = 0;
    for (const [s, owner] of afterStop) if (rejoined.get(s) !== owner) moved++;
    assert.equal(moved, 4, 'only the 4 shards d takes back moved');
    // Each moved shard was handed to d directly (drain, then a directed handover), not released to a race.
    assert.deepEqual(gives.slice(givesBefore).map((g) => g.to), ['d', 'd', 'd', 'd']);
    assertNoOverlap();
  });

  test('renewed events and shardWindow follow each owned shard; a shard not held has no window', async () => {
    const solo = new ShardGroup({ store: new MemoryStore(new MemoryBackend()), group: 'solo', shards: 3, identity: 'solo', ...TIMING });
    const renewed = new Set<number>();
    solo.on('renewed', ({ shard, term, durationMs }) => {
      assert.equal(term, solo.shardWindow(shard)?.term, `shard ${shard}: renewed term is the window's term`);
      assert.ok(durationMs >= 0);
      renewed.add(shard);
    });
    solo.start();
    try {
      await until('3 shards renewed', () => renewed.size === 3);
      for (const s of [0, 1, 2]) {
        const w = solo.shardWindow(s);
        assert.ok(w, `shard ${s} has a window`);
        assert.ok(Math.abs(w.deadlineMs - w.renewStartMs - TIMING.renewDeadlineMs) < 1e-6, `shard ${s}: deadline is renew start + renew deadline`);
      }
      assert.equal(solo.shardWindow(3), undefined);
    } finally {
      await solo.stop();
    }
    assert.equal(solo.shardWindow(0), undefined, 'no window once stopped');
  });

  test('a group with another shard count is refused', async () => {
    const wrong = new ShardGroup({ store: new MemoryStore(data), group: 'orders', shards: 8, identity: 'x', ...TIMING });
    const err = await new Promise<Error>((resolve) => {
      wrong.once('storeError', resolve);
      wrong.start();
    });
    await wrong.stop();
    assert.match(err.message, /has 16 shards in the store, not 8/);
  });
});
