// What a failover costs a real API server, counted by the server itself (its audit log of Lease
// requests, KubeApiServer.requestCounts): each standby claims the released Lease with one conditional PUT of the
// term floor at the version the Lease names (baton.dev/floor-version), and the losers stop
// there — no floor read, no retry. And what happens when that version is stale.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaderElector } from '../../../src/core/elector.js';
import { acquisitionWrite, renewalWrite } from '../../../src/core/lease-writes.js';
import { K8sStore } from '../../../src/stores/k8s/index.js';
import { countingStore, type CountingStore } from '../../../bench/counting-store.js';
import { KubeApiServer } from '../../../infra/servers/index.js';
import { sleep, waitFor } from '../../harness/wait.js';

const server = await new KubeApiServer().start();
const stores: K8sStore[] = [];
after(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await server.stop();
});

const open = (): K8sStore => {
  const s = new K8sStore({ url: `${server.url('default')}&request_timeout=2s` });
  stores.push(s);
  return s;
};

/** diff is the requests served between two counts, by verb. */
function diff(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) if ((b[k] ?? 0) !== (a[k] ?? 0)) out[k] = (b[k] ?? 0) - (a[k] ?? 0);
  return out;
}

test('k8s: a released lease costs each standby one request, twice running', async () => {
  const n = 8;
  const lock = 'herd-count';
  const timing = { leaseDurationMs: 60_000, renewDeadlineMs: 40_000, retryPeriodMs: 20_000 };
  // One handle per candidate: each has its own watch, as separate processes would.
  const counted = new Map<LeaderElector, CountingStore>();
  let live = Array.from({ length: n }, (_, i) => {
    const c = countingStore(open());
    const e = new LeaderElector({ store: c.store, lock, identity: `c${i}`, ...timing }).on('storeError', () => {});
    counted.set(e, c);
    return e;
  });
  const seenLeader = new Map<LeaderElector, string | null>();
  for (const e of live) e.on('leader', (ev) => seenLeader.set(e, ev.holder));
  try {
    // The first leader creates the Lease alone: what is counted is failovers, not the first create.
    let leader = live[0]!;
    leader.start();
    await leader.elected();
    for (const e of live) e.start();
    for (let round = 0; round < 2; round++) {
      const standbys = live.filter((e) => e !== leader);
      await waitFor(() => standbys.every((e) => seenLeader.get(e) === leader.identity), 10_000, 'every standby to see the leader');
      const before = await server.requestCounts();
      const writesBefore = new Map(live.map((e) => [e, counted.get(e)!.calls.write]));
      const next = Promise.race(standbys.map((e) => e.elected().then(() => e)));
      await leader.stop();
      const winner = await next;
      await waitFor(() => standbys.every((e) => seenLeader.get(e) === winner.identity), 10_000, 'every standby to see the new leader');
      await sleep(200); // anything a loser still sends would land here and be counted
      const used = diff(before, await server.requestCounts());
      const writes = (e: LeaderElector) => counted.get(e)!.calls.write - writesBefore.get(e)!;
      assert.ok(standbys.every((e) => writes(e) === 1 || e === winner), 'one claim per standby');
      // The release, one floor PUT per standby (the winner's succeeds), the winner's Lease PUT,
      // and the winner's first renewal if it fell due meanwhile (one PUT each).
      const renewals = writes(winner) - 1;
      assert.deepEqual(used, { update: standbys.length + 2 + renewals }, `requests in failover ${round + 1}: ${JSON.stringify(used)}`);
      live = standbys;
      leader = winner;
    }
  } finally {
    await Promise.all(live.map((e) => e.stop()));
  }
});

test('k8s: a floor raised behind the Lease (a lost acquisition) costs the next claim one refused PUT, then a read', async () => {
  const lock = 'herd-stale-floor';
  const [a, b, c] = [open(), open(), open()];
  const acquire = (holder: string) => acquisitionWrite(holder, 60_000, Date.now(), null, {});
  const first = await a.write(lock, null, acquire('a'));
  assert.ok(first.ok);
  // b claims from a version a has renewed past: b raises the floor (term 2), its Lease PUT loses.
  const stale = await b.read(lock);
  const renewed = await a.write(lock, first.record.revision, renewalWrite(first.record, Date.now()));
  assert.ok(renewed.ok);
  assert.deepEqual(await b.write(lock, stale!.revision, acquire('b')), { ok: false });
  // c's claim at the Lease's current version: the floor-version it names is stale, refused.
  const current = await c.read(lock);
  assert.equal(current!.revision, renewed.record.revision);
  const before = await server.requestCounts();
  assert.deepEqual(await c.write(lock, current!.revision, acquire('c')), { ok: false });
  assert.deepEqual(diff(before, await server.requestCounts()), { update: 1 });
  // The next attempt reads the floor and counts past the skipped term.
  const won = await c.write(lock, current!.revision, acquire('c'));
  assert.ok(won.ok);
  assert.equal(won.record.term, 3);
  assert.equal(won.record.holder, 'c');
});
