/**
 * Fault tests for the NATS KV store with real electors on short leases (lease 2 s, renew
 * deadline 1.4 s, retry 200 ms) against a real nats-server with JetStream: killed (SIGKILL) and
 * restarted on its file store, frozen (SIGSTOP) past the lease, and every client connection
 * reset by a TCP proxy in between. Leaderships must never overlap, terms must only grow, and
 * nothing may escape as an uncaught exception. The shared scenarios are in
 * test/harness/fault-candidates.ts; bounds are generous, the bench measures.
 */
import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from 'nats';
import { InvalidConfigError, StoreUnavailableError } from '../../../src/core/errors.js';
import { exitCodeFor } from '../../../src/cli/exit-codes.js';
import { NatsStore } from '../../../src/stores/nats/index.js';
import { waitFor } from '../../../src/testing/conformance/context.js';
import { FaultHarness } from '../../harness/fault-candidates.js';
import { PartitionProxy } from '../../../chaos/proxy.js';
import { NatsServer, freePort } from '../../../infra/servers/index.js';

const server = await new NatsServer().start();
after(() => server.stop());

const h = new FaultHarness('nats', () => NatsStore.open({ url: `${server.url}?timeout=1s` }));
afterEach(() => h.cleanup());

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

  it('server killed while a leader holds: it steps down by its deadline; after a restart (file store kept) a leader is elected with a higher term', async () => {
    await h.killAndRestart(await h.candidates('kill'), server, 20_000);
  });

  it('server frozen (SIGSTOP) longer than the lease: the leader steps down by its deadline; after SIGCONT a leader is elected again', async () => {
    await h.freezeAndThaw(await h.candidates('stop'), server, 20_000);
  });

  it('every connection reset (TCP proxy) four times under a leader: nothing escapes, a leader renews again', async () => {
    const proxy = new PartitionProxy(server.port);
    await proxy.listen();
    try {
      const group = await h.candidates('reset', { makeStore: () => NatsStore.open({ url: `nats://127.0.0.1:${proxy.port}?timeout=1s` }) });
      await group.leader();
      await sleep(500);
      const errorsBefore = group.storeErrors;
      for (let round = 0; round < 4; round++) {
        proxy.cut('reset');
        await sleep(400);
        proxy.heal();
        await sleep(600);
      }
      await h.assertRecoversFromCuts(group, errorsBefore, 'connection resets', 4);
    } finally {
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
