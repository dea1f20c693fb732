/**
 * Many calls at once on one ZooKeeper session: baton hands at most MAX_IN_FLIGHT requests to the
 * client at a time, each call's deadline counts from when its request goes out, and a connection
 * that answers slowly but steadily is kept (issue #16: 10,000 leases on a loaded machine).
 *
 * Counted on the wire: the store reaches the server through a proxy that splits both directions
 * into ZooKeeper frames, counts requests sent and answers received (xid ≥ 0: not pings, watch
 * events or the handshake), and passes the answers back at a fixed pace — a server that answers
 * every request, in order, slower than the client asks.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { ZooKeeperStore } from '../../../src/stores/zookeeper/index.js';
import { InFlightCap } from '../../../src/stores/zookeeper/in-flight.js';
import { MAX_IN_FLIGHT } from '../../../src/stores/zookeeper/session.js';
import { RENEW_CHUNK } from '../../../src/stores/zookeeper/renew-batch.js';
import { acquireWrite, keepWrite } from '../../../src/testing/conformance/context.js';
import { ZooKeeperServer } from '../../../infra/servers/index.js';

/** Frames splits a byte stream into ZooKeeper frames (a 4-byte length, then the body). */
class Frames {
  private buffered = Buffer.alloc(0);
  push(chunk: Buffer): Buffer[] {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    const out: Buffer[] = [];
    while (this.buffered.length >= 4 && this.buffered.length >= 4 + this.buffered.readInt32BE(0)) {
      const size = 4 + this.buffered.readInt32BE(0);
      out.push(this.buffered.subarray(0, size));
      this.buffered = this.buffered.subarray(size);
    }
    return out;
  }
}

/**
 * PacedProxy forwards one connection at a time to the server and passes the server's frames
 * back `perTick` at a time every `tickMs`. The first frame each way is the session handshake.
 */
class PacedProxy {
  port = 0;
  connections = 0;
  sent = 0;
  answered = 0;
  maxOutstanding = 0;
  /** Requests by op code (1 create, 4 getData, 8/12 getChildren, 14 multi, …). */
  readonly ops = new Map<number, number>();
  private server?: Server;
  private readonly sockets = new Set<Socket>();

  constructor(
    private readonly perTick: number,
    private readonly tickMs: number,
  ) {}

  async listen(targetPort: number): Promise<void> {
    this.server = createServer((client) => {
      this.connections++;
      const upstream = connect({ host: '127.0.0.1', port: targetPort });
      const toServer = new Frames();
      const toClient = new Frames();
      const held: Buffer[] = [];
      let handshakes = 0;
      client.on('data', (chunk: Buffer) => {
        for (const f of toServer.push(chunk)) {
          if (handshakes++ > 0 && f.readInt32BE(4) >= 0) {
            this.sent++;
            this.ops.set(f.readInt32BE(8), (this.ops.get(f.readInt32BE(8)) ?? 0) + 1);
          }
          this.maxOutstanding = Math.max(this.maxOutstanding, this.sent - this.answered);
          upstream.write(f);
        }
      });
      let first = true;
      upstream.on('data', (chunk: Buffer) => held.push(...toClient.push(chunk)));
      const pace = setInterval(() => {
        for (const f of held.splice(0, this.perTick)) {
          if (!first && f.readInt32BE(4) >= 0) this.answered++;
          first = false;
          client.write(f);
        }
      }, this.tickMs);
      for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
        a.on('error', () => b.destroy());
        a.on('close', () => {
          clearInterval(pace);
          b.destroy();
        });
        this.sockets.add(a);
      }
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  close(): void {
    for (const s of this.sockets) s.destroy();
    this.server?.close();
  }
}

describe('zookeeper: many calls at once', () => {
  it('InFlightCap lets in at most its limit, in order of asking, and frees slots once', async () => {
    const cap = new InFlightCap(2);
    const order: number[] = [];
    const releases: (() => void)[] = [];
    const takes = [0, 1, 2, 3, 4].map((i) => cap.take().then((r) => (order.push(i), releases.push(r))));
    await Promise.resolve();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, [0, 1]);
    assert.deepEqual([cap.inFlight, cap.waiting], [2, 3]);
    releases[0]!();
    releases[0]!(); // a second release of the same slot frees nothing
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, [0, 1, 2]);
    assert.deepEqual([cap.inFlight, cap.waiting], [2, 2]);
    cap.reset(); // the client was replaced: its slots are free, and old releases are ignored
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, [0, 1, 2, 3, 4]);
    releases[1]!();
    assert.deepEqual([cap.inFlight, cap.waiting], [2, 0]);
    await Promise.all(takes);
  });

  describe('on a real server', () => {
    let server: ZooKeeperServer;
    after(() => server?.stop());

    it(`renewMany renews ${RENEW_CHUNK} leaders to a multi, and a chunk with a lost race lease by lease`, async () => {
      server ??= await new ZooKeeperServer().start();
      const proxy = new PacedProxy(100_000, 1);
      await proxy.listen(server.port);
      const store = ZooKeeperStore.fromUrl(`zk://127.0.0.1:${proxy.port}/batch`);
      try {
        const leases = 600;
        const locks = Array.from({ length: leases }, (_, i) => `batch-${process.pid}-${i}`);
        const held = await Promise.all(locks.map((l) => store.queue.campaign(l, acquireWrite('alice'))));
        const first = held.map((r) => (assert.ok(r.ok), r.record.revision));
        const multis = () => proxy.ops.get(14) ?? 0;
        const renewAll = (expected: (i: number) => string) => store.renewMany(locks.map((lock, i) => ({ lock, expected: expected(i), next: keepWrite('alice') })));

        const before = multis();
        const renewed = await renewAll((i) => first[i]!);
        assert.ok(renewed.every((r) => r.ok));
        assert.equal(multis() - before, Math.ceil(leases / RENEW_CHUNK), 'multis on the wire for one renewal of every lease');
        let revisions = renewed.map((r) => (r.ok ? r.record.revision : ''));

        // Lease 300 sends the revision before the one it holds: it lost its race, the rest renew.
        const stale = 300;
        const mixed = await renewAll((i) => (i === stale ? first[i]! : revisions[i]!));
        mixed.forEach((r, i) => assert.equal(r.ok, i !== stale, `lease ${i}`));
        // Its leader still holds the revision it had: every lease renews on what it holds.
        revisions = mixed.map((r, i) => (r.ok ? r.record.revision : revisions[i]!));
        const again = await renewAll((i) => revisions[i]!);
        assert.ok(again.every((r) => r.ok));
      } finally {
        await store.close();
        proxy.close();
      }
    });

    it(`keeps at most ${MAX_IN_FLIGHT} requests out and keeps a connection that answers slower than the call deadline`, async () => {
      server ??= await new ZooKeeperServer().start();
      // 20 answers every 20 ms: 2,000 answers take 2 s, 256 of them about 260 ms.
      const proxy = new PacedProxy(20, 20);
      await proxy.listen(server.port);
      const store = ZooKeeperStore.fromUrl(`zk://127.0.0.1:${proxy.port}/inflight?timeout=1s`);
      try {
        await store.verify();
        const calls = 2_000;
        const t0 = performance.now();
        // Each read of a lock that does not exist is one request (getChildren: no node).
        const results = await Promise.allSettled(Array.from({ length: calls }, (_, i) => store.read(`none-${i}`)));
        const tookMs = performance.now() - t0;
        const failed = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
        assert.ok(tookMs > 1_000, `the reads took ${tookMs.toFixed(0)} ms: the proxy did not hold them past the 1 s deadline`);
        assert.equal(failed.length, 0, `${failed.length} of ${calls} reads failed, e.g. ${failed[0]?.reason}`);
        assert.ok(results.every((r) => r.status === 'fulfilled' && r.value === null));
        assert.equal(proxy.connections, 1, `the store reconnected ${proxy.connections - 1} times: it dropped a connection that was answering`);
        assert.ok(proxy.sent >= calls, `${proxy.sent} requests on the wire for ${calls} reads`);
        assert.ok(proxy.maxOutstanding <= MAX_IN_FLIGHT, `${proxy.maxOutstanding} requests were out at once (cap ${MAX_IN_FLIGHT})`);
        // Pipelined, not one by one: the cap is used.
        assert.ok(proxy.maxOutstanding >= MAX_IN_FLIGHT / 2, `only ${proxy.maxOutstanding} requests were ever out at once`);
      } finally {
        await store.close();
        proxy.close();
      }
    });
  });
});
