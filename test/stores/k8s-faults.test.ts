/**
 * Fault tests for the Kubernetes store with real electors on short leases (lease 2 s, renew
 * deadline 1.4 s, retry 200 ms) against the fake API server (test/harness/k8s-fake.ts — a fake,
 * since no kube-apiserver can run here) in its own process: killed (SIGKILL) and restarted with
 * its state file; frozen (SIGSTOP) for longer than the lease, watch streams left open and silent;
 * and every connection cut while a leader renews. Leaderships must never overlap, terms must only
 * grow, nothing may escape. The shared scenarios are in test/harness/fault-candidates.ts.
 */
import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { K8sStore } from '../../src/stores/k8s/index.js';
import { waitFor } from '../../src/testing/conformance/context.js';
import { FaultHarness, TIMING } from '../harness/fault-candidates.js';
import { K8sFakeServer } from '../../infra/servers/index.js';

const server = await new K8sFakeServer().start();
after(() => server.stop());

// Requests time out well inside the renew deadline; watches are re-opened every 2 s and given up
// after 2 s + the request timeout of silence.
const h = new FaultHarness('k8s', () => new K8sStore({ url: `${server.url()}&request_timeout=1s&watch_timeout=2s` }));
afterEach(() => h.cleanup());

describe('k8s faults', () => {
  it('connections cut: watchers are woken and watchLive is false until the watch is back, then they are told again', async () => {
    const store = new K8sStore({ url: `${server.url()}&request_timeout=1s&watch_timeout=2s` });
    try {
      const heard: { record: unknown; live: boolean }[] = [];
      const stop = store.watch('feedcut', (record) => heard.push({ record, live: store.watchLive }));
      await waitFor(() => store.watchLive, 5_000, 'watch open');
      await server.cut();
      await waitFor(() => heard.some((x) => x.record === undefined && !x.live), 5_000, 'a wake-up while the watch is down');
      await waitFor(() => store.watchLive && heard.length >= 2, 5_000, 'told again once the watch is back');
      stop();
    } finally {
      await store.close();
    }
  });

  it('server killed while a leader holds: it steps down by its deadline; after a restart a leader is elected again', async () => {
    await h.killAndRestart(await h.candidates('kill'), server);
  });

  it('server frozen (SIGSTOP) longer than the lease: the leader steps down by its deadline; after SIGCONT a leader is elected again', async () => {
    await h.freezeAndThaw(await h.candidates('stop'), server);
  });

  it('connections cut four times while a renewal is held up in the server: nothing escapes, the elector recovers or steps down', async () => {
    const group = await h.candidates('cut');
    await group.leader();
    await sleep(500);
    const errorsBefore = group.storeErrors;
    try {
      for (let round = 0; round < 4; round++) {
        // Writes wait 600 ms in the server, so the leader's next renewal is in flight when cut.
        await server.slowWrites(600);
        await sleep(TIMING.retryPeriodMs + 250);
        await server.cut();
        await server.slowWrites(0);
        await sleep(400);
      }
    } finally {
      await server.slowWrites(0);
    }
    await h.assertRecoversFromCuts(group, errorsBefore, 'connections cut under held-up renewals', 4);
    await waitFor(() => group.stores.every((s) => s.watchLive), 5_000, 'watches back');
  });

  it('a watch from a version older than the server keeps is answered 410; the store lists again and goes on', async () => {
    const small = await new K8sFakeServer({ history: 5 }).start();
    const store = new K8sStore({ url: `${small.url()}&request_timeout=1s&watch_timeout=1s` });
    const writer = new K8sStore({ url: small.url() });
    try {
      const heard: unknown[] = [];
      const stop = store.watch('gone', (r) => heard.push(r));
      await waitFor(() => store.watchLive, 5_000, 'watch open');
      small.pause(); // the watch ends at its timeout meanwhile and is re-opened after the thaw…
      await sleep(100);
      small.resume();
      // …while 20 writes to another Lease push the watched version out of the 5-event history.
      let cur = await writer.read('other');
      for (let i = 0; i < 20; i++) {
        const r = await writer.write('other', cur?.revision ?? null, { holder: 'w', newTerm: cur === null, leaseDurationMs: 5000, acquiredAt: Date.now(), renewedAt: Date.now(), transitions: 1, stepDownRequested: false, metadata: {} });
        assert.ok(r.ok);
        cur = r.record;
      }
      await sleep(2_500); // the watch times out and re-opens from its old version → 410 → list
      const w = await writer.write('gone', null, { holder: 'x', newTerm: true, leaseDurationMs: 5000, acquiredAt: Date.now(), renewedAt: Date.now(), transitions: 1, stepDownRequested: false, metadata: {} });
      assert.ok(w.ok);
      await waitFor(() => heard.some((r) => (r as { holder?: string } | null)?.holder === 'x'), 5_000, 'the acquisition heard after a 410');
      stop();
    } finally {
      await store.close();
      await writer.close();
      await small.stop();
    }
  });
});
