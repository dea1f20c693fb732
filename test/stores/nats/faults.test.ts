/**
 * What is particular to the NATS KV store against a real nats-server with JetStream: a cut
 * connection wakes watchers and the watch comes back; a bucket that cannot keep terms is refused;
 * an unreachable server. (Server kills, freezes and connection cuts under electors are the public
 * suite's fault scenarios: conformance.test.ts.)
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'nats';
import { InvalidConfigError, StoreUnavailableError } from '../../../src/core/errors.js';
import { exitCodeFor } from '../../../src/cli/exit-codes.js';
import { NatsStore } from '../../../src/stores/nats/index.js';
import { waitFor } from '../../../src/testing/conformance/context.js';
import { PartitionProxy } from '../../../infra/proxy.js';
import { NatsServer, freePort } from '../../../infra/servers/index.js';

const server = await new NatsServer().start();
after(() => server.stop());


describe('nats faults', () => {
  it('connection cut: watchers are woken with watchLive false, and again once the watch is back', async () => {
    const proxy = new PartitionProxy(server.port);
    await proxy.listen();
    const store = await NatsStore.open({ url: `nats://127.0.0.1:${proxy.port}?timeout=1s` });
    try {
      const heard: { record: unknown; live: boolean }[] = [];
      const stop = store.watch!('feedcut', (record) => heard.push({ record, live: store.watchLive }));
      await waitFor(() => store.watchLive, 5_000, 'the watch running');
      proxy.cut('reset');
      await waitFor(() => heard.some((x) => x.record === undefined && !x.live), 5_000, 'a wake-up while the connection is down');
      await assert.rejects(store.read('feedcut'), StoreUnavailableError, 'calls fail at once while disconnected');
      proxy.heal();
      await waitFor(() => store.watchLive, 10_000, 'the watch running again');
      // The key exists now: the new consumer's first delivery is its value.
      const other = await NatsStore.open({ url: server.url });
      await other.write('feedcut', null, { holder: 'x', newTerm: true, leaseDurationMs: 1000, acquiredAt: 0, renewedAt: 0, transitions: 1, stepDownRequested: false, metadata: {} });
      await other.close();
      await waitFor(() => heard.some((x) => x.live && (x.record as { holder?: string } | undefined)?.holder === 'x'), 5_000, 'the write heard');
      stop();
    } finally {
      await store.close();
      await proxy.close();
    }
  });




  it('the wall clock stepping back while connected does not stall the next reconnect (the client paces its dials by Date.now)', async () => {
    const proxy = new PartitionProxy(server.port);
    await proxy.listen();
    const store = await NatsStore.open({ url: `nats://127.0.0.1:${proxy.port}?timeout=1s` });
    const realNow = Date.now;
    try {
      await store.read('clockback');
      // An hour back, as NTP or an operator might step it; only the wall clock moves.
      Date.now = () => realNow() - 3_600_000;
      proxy.cutAll();
      const cutAt = performance.now();
      let back = false;
      while (!back && performance.now() - cutAt < 8_000) {
        back = await store.read('clockback').then(
          () => true,
          () => false,
        );
        if (!back) await new Promise((r) => setTimeout(r, 100));
      }
      // The client's own pacing would wait for the wall clock to catch up: an hour.
      assert.ok(back, 'calls work again within 8 s of the cut');
    } finally {
      Date.now = realNow;
      await store.close();
      await proxy.close();
    }
  });

  it('a bucket that cannot keep terms (memory storage, or a max age) is refused with a config error', async () => {
    const nc = await connect({ servers: `127.0.0.1:${server.port}` });
    try {
      const js = nc.jetstream();
      await js.views.kv('volatile', { storage: (await import('nats')).StorageType.Memory });
      await js.views.kv('expiring', { ttl: 60_000 });
    } finally {
      await nc.close();
    }
    await assert.rejects(NatsStore.open({ url: `${server.url}?bucket=volatile` }), (e: Error) => e instanceof InvalidConfigError && /memory storage/.test(e.message));
    await assert.rejects(NatsStore.open({ url: `${server.url}?bucket=expiring` }), (e: Error) => e instanceof InvalidConfigError && /max age/.test(e.message));
  });

  it('an unreachable server is StoreUnavailableError (exit 69) with one line', async () => {
    const port = await freePort();
    await assert.rejects(NatsStore.open({ url: `nats://127.0.0.1:${port}?timeout=500ms` }), (e: Error) => {
      return e instanceof StoreUnavailableError && exitCodeFor(e) === 69 && !e.message.includes('\n') && e.message.startsWith('nats:');
    });
  });
});
