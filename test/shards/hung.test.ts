/**
 * ShardGroup.giveUpHung (issue 28) in one process over a shared memory store: a member gives up
 * one shard whose work hung → another member owns it within a few retry periods, the member's
 * other shards stay, the shard is not handed back during the back-off, the ledger keeps why under
 * the shard's lock, `baton_step_downs_total{reason="hung"}` counts it, and the back-off grows.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { ShardGroup, shardLock } from '../../src/shards/group.js';
import { MemoryBackend, MemoryStore } from '../../src/stores/memory/index.js';
import { readStepDowns } from '../../src/core/hang-backoff.js';
import { instrumentElector } from '../../src/metrics/instrument.js';

const TIMING = { leaseDurationMs: 800, renewDeadlineMs: 500, retryPeriodMs: 100 };
const groups: ShardGroup[] = [];
after(async () => {
  await Promise.all(groups.map((g) => g.stop()));
});

async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const end = performance.now() + ms;
  while (!check()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function fleet(group: string, shards: number, hangBackoffBaseMs: number) {
  const data = new MemoryBackend();
  const members = ['a', 'b', 'c'].map((identity) => {
    const g = new ShardGroup({ store: new MemoryStore(data), group, shards, identity, hangBackoffBaseMs, ...TIMING });
    groups.push(g);
    return g.start();
  });
  const owner = (s: number) => members.filter((g) => g.ownedShards().includes(s)).map((g) => g.identity);
  return { data, members, owner };
}

describe('ShardGroup: a shard whose work hung', () => {
  test('moves to another member at once, the rest stays, it does not come back during the back-off; ledger and metric say why', async () => {
    const { data, members, owner } = fleet('hung1', 6, 3000);
    await until('6 shards over 3 members, 2 each', () => members.every((g) => g.ownedShards().length === 2));
    const [a] = members;
    const [hungShard, keptShard] = a!.ownedShards();
    const registry = new Registry();
    instrumentElector(a!.electorOf(hungShard!)!, { registry });
    const released: string[] = [];
    a!.on('released', ({ shard, reason }) => released.push(`${shard}:${reason}`));

    const t0 = performance.now();
    const given = await a!.giveUpHung(hungShard!, 'no heartbeat within the progress timeout (2s)');
    assert.deepEqual(given, { backoffMs: 3000, streak: 1 });
    assert.deepEqual(released, [`${hungShard}:hung`]);
    await until('another member to own the hung shard', () => owner(hungShard!).length === 1 && owner(hungShard!)[0] !== 'a', 3000);
    const movedMs = performance.now() - t0;
    assert.ok(movedMs < 2000, `moved in ${movedMs} ms`);
    assert.ok(a!.ownedShards().includes(keptShard!), "a's healthy shard stayed");
    assert.ok(a!.excludedShards().has(hungShard!));

    // Balance comes back (a takes a shard in exchange), and the hung shard never returns to a
    // during its back-off.
    const end = performance.now() + 2000;
    while (performance.now() < end) {
      assert.ok(!a!.ownedShards().includes(hungShard!), 'the hung shard came back to its member during the back-off');
      assert.ok(!a!.assignedShards().includes(hungShard!), 'the assignment handed it back during the back-off');
      await new Promise((r) => setTimeout(r, 20));
    }
    await until('balanced again', () => members.every((g) => g.ownedShards().length === 2), 3000);
    assert.ok(a!.ownedShards().includes(keptShard!), "a's healthy shard still stayed");

    const steps = await readStepDowns(new MemoryStore(data), shardLock('hung1', hungShard!));
    const last = steps.get(shardLock('hung1', hungShard!));
    assert.equal(last?.holder, 'a');
    assert.equal(last?.reason, 'hung');
    assert.equal(last?.note, 'no heartbeat within the progress timeout (2s)');
    assert.equal(last?.backoffMs, 3000);
    assert.match(await registry.metrics(), /baton_step_downs_total\{lock="hung1\/shard\/\d+",reason="hung"\} 1/);
  });

  test('the back-off grows with each hang of the same shard in a row; another shard has its own', async () => {
    const { members } = fleet('hung2', 3, 1000);
    await until('one shard each', () => members.every((g) => g.ownedShards().length === 1));
    const a = members[0]!;
    const s = a.ownedShards()[0]!;
    assert.equal((await a.giveUpHung(s)).backoffMs, 1000);
    assert.deepEqual(await a.giveUpHung(s), { backoffMs: 2000, streak: 2 });
    assert.equal((await a.giveUpHung((s + 1) % 3)).backoffMs, 1000);
    await assert.rejects(a.giveUpHung(7), /no shard 7/);
  });

  test('a term cut short of the back-off base (a resign, a rebalance) keeps the streak; one that led that long starts it over', async () => {
    const alone = new ShardGroup({ store: new MemoryStore(new MemoryBackend()), group: 'hung4', shards: 1, identity: 'a', hangBackoffBaseMs: 1000, ...TIMING });
    groups.push(alone);
    alone.start();
    const owned = (what: string) => until(what, () => alone.ownedShards().includes(0), 5000);
    await owned('the shard owned');
    assert.deepEqual(await alone.giveUpHung(0), { backoffMs: 1000, streak: 1 });
    // The only member: it gets the shard back once its exclusion ends.
    await owned('the shard owned again after the back-off');
    await alone.electorOf(0)!.resign();
    await owned('the shard owned again after a short term');
    assert.deepEqual(await alone.giveUpHung(0), { backoffMs: 2000, streak: 2 }, 'a term shorter than the base did not start the streak over');
    await owned('the shard owned again after the second back-off');
    const since = performance.now();
    await until('a term as long as the base', () => performance.now() - since > 1100, 5000);
    await alone.electorOf(0)!.resign();
    await owned('the shard owned again after a long term');
    assert.deepEqual(await alone.giveUpHung(0), { backoffMs: 1000, streak: 1 }, 'a term as long as the base started the streak over');
  });

  test('a shard that every member excludes waits for the first exclusion to end, then is owned again', async () => {
    const { members, owner } = fleet('hung3', 1, 1000);
    await until('the shard owned', () => owner(0).length === 1);
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      const holder = members.find((g) => g.ownedShards().includes(0)) ?? (await (async () => {
        await until('the shard owned again', () => owner(0).length === 1, 5000);
        return members.find((g) => g.ownedShards().includes(0))!;
      })());
      order.push(holder.identity);
      await holder.giveUpHung(0);
    }
    assert.equal(new Set(order).size, 3, `each member had it once: ${order}`);
    // All three exclude it now; the first to have given it up is the first allowed back.
    await until('owned again after the back-off', () => owner(0).length === 1, 5000);
    assert.equal(owner(0)[0], order[0]);
  });
});
