/**
 * Fault tests for the etcd store with real electors on short leases (lease 2 s, renew deadline
 * 1.4 s, retry 200 ms) against a real etcd 3.4: killed (SIGKILL) and restarted, frozen (SIGSTOP)
 * for longer than the lease, and every TCP connection cut under the clients' feet by a loopback
 * proxy (the one stand-in here: a real proxy process would do the same, a little slower).
 * Throughout, leaderships must never overlap, terms must only grow, and nothing may escape as
 * `uncaughtException` / `unhandledRejection`. Bounds are generous: these prove behaviour; the
 * benchmarks measure it. The scenarios shared with the other stores are in
 * test/harness/fault-candidates.ts.
 */
import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { EtcdStore } from '../../src/stores/etcd/index.js';
const open = async (url: string) => EtcdStore.fromUrl(url);
import { waitFor } from '../../src/testing/conformance/context.js';
import { FaultHarness, TIMING } from '../harness/fault-candidates.js';
import { EtcdServer, freePort } from '../../infra/servers/index.js';

const server = await new EtcdServer().start();
after(() => server.stop());

/** Each candidate has its own store handle (its own connection). */
const h = new FaultHarness('etcd', () => open(server.url));
afterEach(() => h.cleanup());

describe('etcd: faults', () => {
  it('server killed: the leader stops within its renew deadline; after a restart a leader is elected again', async () => {
    await h.killAndRestart(await h.candidates('kill'), server);
  });

  it('server frozen (SIGSTOP) longer than the lease: the leader stops by its deadline; after SIGCONT a leader is elected again', async () => {
    await h.freezeAndThaw(await h.candidates('pause'), server);
  });

  it('every connection cut: nothing escapes, watches come back, handover stays notified', async () => {
    const proxy = await CuttingProxy.start(server.port);
    try {
      const g = await h.candidates('cut', { makeStore: () => open(`etcd://127.0.0.1:${proxy.port}`) });
      await g.leader();
      await waitFor(() => g.electors.every((e) => e.leader() !== null), 5000, 'both to see the leader');
      const before = proxy.accepted;
      for (let i = 0; i < 3; i++) {
        proxy.cut();
        await sleep(300);
      }
      // Let things settle: whoever leads now, both candidates agree on it.
      const settled = await waitFor(() => {
        const leaders = g.electors.filter((e) => e.isLeader());
        const holder = leaders[0]?.identity;
        return leaders.length === 1 && g.electors.every((e) => e.leader()?.holder === holder) ? leaders[0] : undefined;
      }, 15_000, 'one leader seen by both after the cuts');
      await sleep(TIMING.leaseDurationMs); // long enough for any standby timer to have fired once
      const stoppedAt = performance.now();
      await settled.stop();
      const next = await waitFor(() => g.electedSince(stoppedAt), 5000, 'the standby after a release');
      assert.ok(next.at - stoppedAt < 1000, `handover took ${(next.at - stoppedAt).toFixed(0)} ms: the standby was not notified`);
      assert.ok(proxy.accepted > before, 'the clients reconnected after the cuts');
      h.report(`handover after 3 cuts: ${(next.at - stoppedAt).toFixed(0)} ms; ${proxy.accepted - before} reconnections`);
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

/** CuttingProxy forwards loopback TCP to etcd and can drop every connection at once. */
class CuttingProxy {
  accepted = 0;
  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly sockets: Set<Socket>,
  ) {}

  static async start(targetPort: number): Promise<CuttingProxy> {
    const port = await freePort();
    const sockets = new Set<Socket>();
    let proxy: CuttingProxy | undefined;
    const srv = createServer((client) => {
      if (proxy) proxy.accepted++;
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
    proxy = new CuttingProxy(srv, port, sockets);
    return proxy;
  }

  cut(): void {
    for (const s of this.sockets) s.resetAndDestroy();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise((r) => this.server.close(r));
  }
}
