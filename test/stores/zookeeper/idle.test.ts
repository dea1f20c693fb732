/**
 * Idle load on ZooKeeper: while a baton leader holds the lock and renews, the standby right
 * behind it sends no read, no campaign and no watch request of its own accord over several
 * lease durations — only session pings and one stat of the leader's record per lease (the look
 * that expires a leader whose elector stopped renewing while its session lives on).
 *
 * Counted on the wire: the standby reaches the server through a proxy that splits its traffic
 * into ZooKeeper frames (a 4-byte length, then the request header's xid and op code) and counts
 * op codes. The first frame of each connection is the session handshake, which has no header.
 *
 * Also: a standby whose connection goes silent for good (a proxy that stops forwarding without
 * closing, as when a member's host dies) drops it by its read timeout, reconnects, and takes
 * over a released lock.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LeaderElector } from '../../../src/core/elector.js';
import { ZooKeeperStore } from '../../../src/stores/zookeeper/index.js';
import { ZooKeeperServer } from '../../../infra/servers/index.js';
import { sleep, waitFor, within } from '../../harness/wait.js';
import { SilentProxy } from '../../harness/silent-proxy.js';

const server = await new ZooKeeperServer().start();
after(() => server.stop());

const timing = { leaseDurationMs: 2_000, renewDeadlineMs: 1_200, retryPeriodMs: 500 };
/** ZooKeeper op codes (jute): the ones an idle standby may send, and the ones it must not. */
const OP = { create: 1, delete: 2, exists: 3, getData: 4, setData: 5, getChildren: 8, ping: 11, getChildren2: 12, multi: 14, setWatches: 101 } as const;
const NAMES = new Map<number, string>(Object.entries(OP).map(([k, v]) => [v, k]));

/**
 * CountingProxy is a SilentProxy that counts the client's requests by op code, splitting its
 * traffic into ZooKeeper frames, and notes when the client last sent anything.
 */
class CountingProxy extends SilentProxy {
  readonly ops = new Map<string, number>();
  /** When the client side last sent anything (performance.now()). */
  lastSentMs = 0;
  constructor() {
    const frames = new WeakMap<object, { buffered: Buffer; handshake: boolean }>();
    super((chunk, connection) => {
      this.lastSentMs = performance.now();
      const c = frames.get(connection) ?? { buffered: Buffer.alloc(0), handshake: true };
      frames.set(connection, c);
      c.buffered = Buffer.concat([c.buffered, chunk]);
      while (c.buffered.length >= 4 && c.buffered.length >= 4 + c.buffered.readInt32BE(0)) {
        const frame = c.buffered.subarray(4, 4 + c.buffered.readInt32BE(0));
        c.buffered = c.buffered.subarray(4 + frame.length);
        if (c.handshake) c.handshake = false;
        else if (frame.length >= 8) {
          const name = NAMES.get(frame.readInt32BE(4)) ?? `op${frame.readInt32BE(4)}`;
          this.ops.set(name, (this.ops.get(name) ?? 0) + 1);
        }
      }
    });
  }
  snapshot(): Map<string, number> {
    return new Map(this.ops);
  }
}

describe('zookeeper: idle standby', () => {
  it('the standby behind a renewing leader sends only pings and one stat per lease over four lease durations', async () => {
    const proxy = new CountingProxy();
    await proxy.listen(server.port);
    const lock = `idle-${process.pid}`;
    const leaderStore = ZooKeeperStore.fromUrl(server.url('/idle'));
    const standbyStore = ZooKeeperStore.fromUrl(`zk://127.0.0.1:${proxy.port}/idle`);
    const leader = new LeaderElector({ store: leaderStore, lock, identity: 'leader', ...timing });
    const standby = new LeaderElector({ store: standbyStore, lock, identity: 'standby', ...timing });
    try {
      leader.start();
      await within(leader.elected(), 10_000, 'the leader');
      standby.start();
      await waitFor(() => standby.leader()?.holder === 'leader', 10_000, 'the standby to see the leader');
      await sleep(500); // start-up (campaign, watches) is not idle
      const a = proxy.snapshot();
      const t0 = performance.now();
      let renewals = 0;
      const onRenewed = () => renewals++;
      leader.on('renewed', onRenewed);
      await sleep(timing.leaseDurationMs * 4);
      leader.off('renewed', onRenewed);
      const b = proxy.snapshot();
      const seconds = (performance.now() - t0) / 1000;
      const sent: Record<string, number> = {};
      for (const [op, n] of b) if (n - (a.get(op) ?? 0) > 0) sent[op] = n - (a.get(op) ?? 0);
      const { ping = 0, exists = 0, ...rest } = sent;
      assert.ok(renewals >= 4, `the leader renewed ${renewals} times in ${seconds.toFixed(1)} s: the window did not hold a leader`);
      assert.equal(standby.isLeader(), false);
      assert.deepEqual(rest, {}, `the idle standby sent requests besides pings and stats: ${JSON.stringify(rest)}`);
      // One stat per lease; one more when the window starts or ends mid-lease.
      assert.ok(exists <= Math.ceil((seconds * 1000) / timing.leaseDurationMs) + 1, `${exists} stats in ${seconds.toFixed(1)} s with a ${timing.leaseDurationMs} ms lease`);
      // Pings: a third of each session's timeout apart while idle (the campaign session's is the lease).
      assert.ok(ping <= Math.ceil((seconds * 1000) / (timing.leaseDurationMs / 3)) + 4, `${ping} pings in ${seconds.toFixed(1)} s`);
    } finally {
      await standby.stop();
      await leader.stop();
      await standbyStore.close();
      await leaderStore.close();
      proxy.close();
    }
  });

  it('a standby whose connection goes silent drops it by its read timeout and takes over a released lock', async () => {
    const proxy = new CountingProxy();
    await proxy.listen(server.port);
    const lock = `silent-${process.pid}`;
    // A lease longer than the base session's read timeout (20 s), so the standby's queue entry
    // outlives the silence and only the dropped watch connection can wake it.
    const long = { leaseDurationMs: 40_000, renewDeadlineMs: 30_000, retryPeriodMs: 2_000 };
    const leaderStore = ZooKeeperStore.fromUrl(server.url('/idle'));
    const standbyStore = ZooKeeperStore.fromUrl(`zk://127.0.0.1:${proxy.port}/idle`);
    const leader = new LeaderElector({ store: leaderStore, lock, identity: 'leader', ...long });
    const standby = new LeaderElector({ store: standbyStore, lock, identity: 'standby', ...long });
    try {
      leader.start();
      await within(leader.elected(), 10_000, 'the leader');
      standby.start();
      await waitFor(() => standby.leader()?.holder === 'leader', 10_000, 'the standby to see the leader');
      // Silence only a standby at rest: a call of its start-up still in flight would time out
      // and reconnect at once, which is not what this test is about.
      await waitFor(() => performance.now() - proxy.lastSentMs > 1_500, 20_000, 'the standby to go quiet');
      proxy.silence();
      await leader.stop();
      const t0 = performance.now();
      // The watches live on the 30 s base session: silent for 20 s, it is dropped and made again,
      // and the standby, told that anything may have changed, campaigns. Without the read
      // timeout nothing wakes it: the client keeps writing pings into the silent socket.
      await within(standby.elected(), 35_000, 'the standby to take over after its connection went silent');
      const tookMs = performance.now() - t0;
      assert.ok(tookMs >= 10_000, `took over ${tookMs.toFixed(0)} ms after the silence: woken by something other than the read timeout`);
    } finally {
      await standby.stop();
      await leader.stop();
      await standbyStore.close();
      await leaderStore.close();
      proxy.close();
    }
  });
});
