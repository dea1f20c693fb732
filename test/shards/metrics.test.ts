/**
 * instrumentShardGroup (metrics/shard-group.ts) in one process over a shared memory store: per
 * shard, ownership under baton's and client-go's gauges, hung step-downs (0 from the start), the
 * last step-down's reason and note, and the exclusion left — beside an elector instrumented in
 * the same registry, whose series it neither breaks nor drops on close.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Registry } from 'prom-client';
import { LeaderElector } from '../../src/core/elector.js';
import { instrumentElector, instrumentShardGroup } from '../../src/metrics/index.js';
import { ShardGroup, shardLock } from '../../src/shards/group.js';
import { MemoryBackend, MemoryStore } from '../../src/stores/memory/index.js';
import { parsePrometheus, metric } from '../server/serve-harness.js';

const TIMING = { leaseDurationMs: 800, renewDeadlineMs: 500, retryPeriodMs: 100 };
const stops: (() => Promise<void>)[] = [];
after(async () => {
  for (const stop of stops) await stop();
});

async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const end = performance.now() + ms;
  while (!check()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('instrumentShardGroup: owned, hung step-downs with why, exclusion; beside an elector in one registry; close drops only its series', async () => {
  const data = new MemoryBackend();
  const [a, b] = ['a', 'b'].map((identity) => {
    const g = new ShardGroup({ store: new MemoryStore(data), group: 'mx', shards: 4, identity, hangBackoffBaseMs: 3000, ...TIMING });
    stops.push(() => g.stop());
    return g.start();
  }) as [ShardGroup, ShardGroup];
  const lone = new LeaderElector({ store: new MemoryStore(data), lock: 'lone', identity: 'a', ...TIMING });
  stops.push(() => lone.stop());
  lone.start();
  const registry = new Registry();
  const elector = instrumentElector(lone, { registry });
  const member = instrumentShardGroup(a, { registry });
  await until('2 shards each, and the lone lock led', () => a.ownedShards().length === 2 && b.ownedShards().length === 2 && lone.isLeader());
  const samples = async () => parsePrometheus(await registry.metrics()).samples;

  const first = await samples();
  for (let s = 0; s < 4; s++) {
    const owns = a.ownedShards().includes(s) ? 1 : 0;
    assert.equal(metric(first, 'baton_is_leader', { lock: shardLock('mx', s) }), owns);
    assert.equal(metric(first, 'leader_election_master_status', { name: shardLock('mx', s) }), owns);
    assert.equal(metric(first, 'baton_step_downs_total', { lock: shardLock('mx', s), reason: 'hung' }), 0);
    if (owns) assert.ok(metric(first, 'baton_term', { lock: shardLock('mx', s) })! >= 1, 'the term of a shard a owns');
  }
  assert.equal(metric(first, 'baton_is_leader', { lock: 'lone' }), 1, "the elector's own series are there too");

  const [hung, kept] = a.ownedShards() as [number, number];
  await a.giveUpHung(hung, 'the health command failed 3 times in a row (exit 1)');
  const after = await samples();
  assert.equal(metric(after, 'baton_step_downs_total', { lock: shardLock('mx', hung), reason: 'hung' }), 1);
  assert.equal(metric(after, 'baton_last_step_down_info', { lock: shardLock('mx', hung), reason: 'hung', note: 'the health command failed 3 times in a row (exit 1)' }), 1);
  assert.equal(metric(after, 'baton_is_leader', { lock: shardLock('mx', hung) }), 0);
  const left = metric(after, 'baton_shard_exclusion_seconds', { lock: shardLock('mx', hung) })!;
  assert.ok(left > 0 && left <= 3, `exclusion left ${left}`);
  assert.equal(metric(after, 'baton_step_downs_total', { lock: shardLock('mx', kept), reason: 'hung' }), 0);
  assert.equal(after.filter((x) => x.name === 'baton_last_step_down_info' && x.labels.lock === shardLock('mx', kept)).length, 0);

  member.close();
  const closed = await samples();
  assert.deepEqual(closed.filter((x) => x.labels.lock?.startsWith('mx/') || x.labels.name?.startsWith('mx/')), [], 'close drops the group\'s series');
  assert.equal(metric(closed, 'baton_is_leader', { lock: 'lone' }), 1, "and keeps the elector's");
  elector.close();
});

test("instrumentElector: baton_last_step_down_info is one series per lock, the latest step-down's", async () => {
  const store = new MemoryStore(new MemoryBackend());
  const e = new LeaderElector({ store, lock: 'last', identity: 'x', ...TIMING });
  stops.push(() => e.stop());
  const registry = new Registry();
  const handle = instrumentElector(e, { registry });
  e.start();
  await until('x leads', () => e.isLeader());
  await e.resign({ reason: 'hung', note: 'no progress within 2000ms' });
  let info = parsePrometheus(await registry.metrics()).samples.filter((x) => x.name === 'baton_last_step_down_info');
  assert.deepEqual(info.map((x) => x.labels), [{ lock: 'last', reason: 'hung', note: 'no progress within 2000ms' }]);
  await until('x leads again', () => e.isLeader());
  await e.resign();
  info = parsePrometheus(await registry.metrics()).samples.filter((x) => x.name === 'baton_last_step_down_info');
  assert.deepEqual(info.map((x) => x.labels), [{ lock: 'last', reason: 'resigned', note: '' }]);
  handle.close();
  assert.equal(parsePrometheus(await registry.metrics()).samples.filter((x) => x.name === 'baton_last_step_down_info').length, 0);
});
