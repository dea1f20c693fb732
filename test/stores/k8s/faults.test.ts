/**
 * Kubernetes-only faults, beyond the public suite's (kill, freeze, cut connections and watches —
 * test/stores/k8s/conformance.test.ts), against the fake API server (infra/fakes/k8s-api.ts — a
 * fake, since no kube-apiserver can run here): every connection cut while a renewal is held up
 * in the server, and a watch answered 410 Gone. Leaderships never overlap, nothing escapes.
 */
import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { K8sStore } from '../../../src/stores/k8s/index.js';
import { Candidates, faultTiming, recordEscapes, uniqueLock, waitFor } from '../../../src/testing/index.js';
import { K8sFakeServer } from '../../../infra/servers/index.js';

const server = await new K8sFakeServer().start();
const escapes = recordEscapes();
const groups: Candidates<K8sStore>[] = [];
after(async () => {
  escapes.stop();
  await server.stop();
});
afterEach(async () => {
  await Promise.all(groups.splice(0).map((g) => g.stop()));
  assert.deepEqual(escapes.take(), [], 'nothing escaped as an uncaught exception or unhandled rejection');
});
const TIMING = faultTiming(2_000);

describe('k8s faults', () => {
  it('connections cut four times while a renewal is held up in the server: nothing escapes, the elector recovers or steps down', async () => {
    const group = await new Candidates<K8sStore>(uniqueLock('k8s-cut'), TIMING).start(2, () => new K8sStore({ url: `${server.url()}&request_timeout=1s&watch_timeout=2s` }));
    groups.push(group);
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
    await group.assertRecoversFromCuts(errorsBefore);
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
