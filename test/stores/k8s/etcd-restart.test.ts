/**
 * The API server's own storage failing under a baton leader: the real kube-apiserver's etcd is
 * killed (the API server stays up and answers every Lease request with an error) and later
 * started again with its data. While etcd is down nobody may lead — the leader steps down by
 * its own deadline, no standby can win — and once it is back a leader is elected again, with a
 * higher term than any before.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { LeaderElector } from '../../../src/core/elector.js';
import { K8sStore } from '../../../src/stores/k8s/index.js';
import { KubeApiServer } from '../../../infra/servers/index.js';
import { sleep, waitFor } from '../../harness/wait.js';

const server = await new KubeApiServer().start();
const stores: K8sStore[] = [];
after(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await server.stop();
});

const TIMING = { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 250 };

test('k8s: etcd killed under the API server → the leader steps down and nobody leads; etcd back → a new leader with a higher term', async () => {
  const spans: { who: string; term: number; from: number; to?: number }[] = [];
  const electors = ['a', 'b', 'c'].map((who) => {
    const store = new K8sStore({ url: `${server.url('default')}&request_timeout=1s&watch_timeout=2s` });
    stores.push(store);
    const e = new LeaderElector({ store, lock: 'etcd-restart', identity: who, ...TIMING }).on('storeError', () => {});
    e.on('elected', ({ term }) => spans.push({ who, term, from: performance.now() }));
    e.on('stopped', ({ term }) => {
      const s = spans.find((x) => x.who === who && x.term === term && x.to === undefined);
      if (s) s.to = performance.now();
    });
    return e.start();
  });
  try {
    const leading = () => spans.filter((s) => s.to === undefined);
    await waitFor(() => leading().length === 1 || null, 30_000, 'a first leader');
    const first = leading()[0]!;
    await server.etcd.kill();
    const killedAt = performance.now();
    await waitFor(() => leading().length === 0 || null, 10_000, 'the leader to step down while etcd is down');
    assert.ok(first.to! - killedAt <= TIMING.renewDeadlineMs + 1000, `stepped down ${(first.to! - killedAt).toFixed(0)} ms after the kill`);
    // Longer than a lease: still nobody, since no write can succeed.
    await sleep(2 * TIMING.leaseDurationMs);
    assert.equal(leading().length, 0, `someone led while etcd was down: ${JSON.stringify(leading())}`);
    assert.equal(spans.length, 1);
    await server.etcd.start();
    await waitFor(() => leading().length === 1 || null, 60_000, 'a leader once etcd is back');
    const next = leading()[0]!;
    assert.ok(next.term > first.term, `term ${next.term} after ${first.term}`);
    // Never two at once.
    const sorted = [...spans].sort((x, y) => x.from - y.from);
    for (let i = 1; i < sorted.length; i++) assert.ok((sorted[i - 1]!.to ?? Infinity) <= sorted[i]!.from, 'two leaders overlapped');
  } finally {
    await Promise.all(electors.map((e) => e.stop()));
  }
});
