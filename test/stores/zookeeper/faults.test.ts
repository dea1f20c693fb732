/**
 * Fault tests for the ZooKeeper store with real electors on short leases (lease 2 s, renew
 * deadline 1.4 s, retry 200 ms) against a real standalone ZooKeeper 3.8: killed (SIGKILL) and
 * restarted, frozen (SIGSTOP) for longer than the lease (node-zookeeper-client has no read
 * timeout: the store's call deadlines and its socket kick are what notice), and every TCP
 * connection cut by a loopback proxy. Leaderships never overlap, terms only grow, nothing
 * escapes. The shared scenarios are in test/harness/fault-candidates.ts.
 */
import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { ZooKeeperStore } from '../../../src/stores/zookeeper/index.js';
import { waitFor } from '../../../src/testing/conformance/context.js';
import { FaultHarness, TIMING } from '../../harness/fault-candidates.js';
import { ZooKeeperServer, freePort } from '../../../infra/servers/index.js';

const server = await new ZooKeeperServer().start();
after(() => server.stop());

const open = async (url: string) => ZooKeeperStore.fromUrl(url);
const h = new FaultHarness('zookeeper', () => open(server.url('/faults')));
afterEach(() => h.cleanup());

describe('zookeeper: faults', () => {
  it('server killed: the leader stops within its renew deadline; after a restart a leader is elected again', async () => {
    await h.killAndRestart(await h.candidates('kill'), server);
  });

  it('server frozen (SIGSTOP) longer than the lease: the leader stops by its deadline; after SIGCONT a leader is elected again', async () => {
    await h.freezeAndThaw(await h.candidates('pause'), server);
  });

  it('every connection cut: the session survives the cuts, one leader, handover stays notified', async () => {
    const proxy = await cuttingProxy(server.port);
    try {
      const g = await h.candidates('cut', { makeStore: () => open(`zk://127.0.0.1:${proxy.port}/faults`) });
      await g.leader();
      await waitFor(() => g.electors.every((e) => e.leader() !== null), 5000, 'both to see the leader');
      const before = proxy.accepted();
      for (let i = 0; i < 3; i++) {
        proxy.cut();
        await sleep(300);
      }
      const settled = await waitFor(() => {
        const leaders = g.electors.filter((e) => e.isLeader());
        const holder = leaders[0]?.identity;
        return leaders.length === 1 && g.electors.every((e) => e.leader()?.holder === holder) ? leaders[0] : undefined;
      }, 15_000, 'one leader seen by both after the cuts');
      await sleep(TIMING.leaseDurationMs);
      const stoppedAt = performance.now();
      await settled.stop();
      const next = await waitFor(() => g.electedSince(stoppedAt), 5000, 'the standby after a release');
      assert.ok(next.at - stoppedAt < 1000, `handover took ${(next.at - stoppedAt).toFixed(0)} ms: the standby was not notified`);
      assert.ok(proxy.accepted() > before, 'the clients reconnected after the cuts');
      h.report(`handover after 3 cuts: ${(next.at - stoppedAt).toFixed(0)} ms; ${proxy.accepted() - before} reconnections`);
      g.assertNoOverlap();
    } finally {
      await proxy.close();
    }
  });

  it('closing stores while the server is down: nothing escapes', async () => {
    const g = await h.candidates('close-down');
    await g.leader();
    await h.kill(server);
    await sleep(300);
    await g.stop();
    await sleep(300);
  });
});

/** cuttingProxy forwards loopback TCP to ZooKeeper and can reset every connection at once. */
async function cuttingProxy(targetPort: number) {
  const port = await freePort();
  const sockets = new Set<Socket>();
  let accepted = 0;
  const srv = createServer((client) => {
    accepted++;
    const upstream = connect({ host: '127.0.0.1', port: targetPort });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => srv.listen(port, '127.0.0.1', r));
  const cut = () => {
    for (const s of sockets) s.resetAndDestroy();
  };
  return {
    port,
    accepted: () => accepted,
    cut,
    close: async () => {
      cut();
      await new Promise((r) => srv.close(r));
    },
  };
}
