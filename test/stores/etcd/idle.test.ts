/**
 * Idle load on etcd: while a leader holds the lock and renews, a queued standby whose lock
 * watch is live makes no read, no campaign and no watch request over several lease durations.
 * What it still sends is its queue entry's lease keepalive — a place in etcd's election queue
 * lives only by its lease, as in etcd's own `concurrency.Election` (docs/history/performance.md).
 *
 * Counted by the server: `/metrics` `grpc_server_msg_received_total` per gRPC method (a unary
 * call is one message, so is every message on a stream; the HTTP/2 PINGs that check the
 * connection are not gRPC messages). The counter cannot tell clients apart, so the window runs
 * from just after one leader renewal to just after the n-th, and the leader's own share — one
 * keepalive and one txn per renewal — is taken off.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LeaderElector } from '../../../src/core/elector.js';
import { EtcdStore } from '../../../src/stores/etcd/index.js';
import { EtcdServer } from '../../../infra/servers/index.js';
import { sleep, waitFor, within } from '../../harness/wait.js';
import { SilentProxy } from '../../harness/silent-proxy.js';

const server = await new EtcdServer().start();
after(() => server.stop());

const timing = { leaseDurationMs: 2_000, renewDeadlineMs: 1_200, retryPeriodMs: 500 };

/** received reads the server's gRPC messages received so far, per method. */
async function received(): Promise<Map<string, number>> {
  const text = await (await fetch(`${server.endpoint}/metrics`)).text();
  const counts = new Map<string, number>();
  for (const m of text.matchAll(/^grpc_server_msg_received_total\{[^}]*grpc_method="([^"]+)"[^}]*\} (\S+)$/gm)) {
    counts.set(m[1]!, (counts.get(m[1]!) ?? 0) + Number(m[2]));
  }
  return counts;
}

describe('etcd: idle standby', () => {
  // With the candidate registry on (beating every 500 ms were it in the ledger), the same: its
  // entries ride on the candidates' leases (presence), so they cost nothing at rest.
  for (const registry of [false, true]) it(`a queued standby sends nothing but its queue entry’s keepalive over four lease durations while a leader renews${registry ? ', with the candidate registry on' : ''}`, async () => {
    const lock = `idle-${registry ? 'registry-' : ''}${process.pid}`;
    const leaderStore = EtcdStore.fromUrl(server.url);
    const standbyStore = EtcdStore.fromUrl(server.url);
    const candidate = registry ? { candidate: { refreshMs: 500, appVersion: '1.0.0' } } : {};
    const leader = new LeaderElector({ store: leaderStore, lock, identity: 'leader', ...timing, ...candidate });
    const standby = new LeaderElector({ store: standbyStore, lock, identity: 'standby', ...timing, ...candidate });
    try {
      leader.start();
      await within(leader.elected(), 10_000, 'the leader');
      standby.start();
      await waitFor(() => standby.leader()?.holder === 'leader', 10_000, 'the standby to see the leader');
      await sleep(500); // start-up (campaign, watch set-up) is not idle
      if (registry) assert.deepEqual((await standby.candidates()).map((c) => `${c.identity}${c.presence ? '' : ' (ledger)'}`), ['leader', 'standby'], 'both registered');
      // A leader that stepped down (a badly loaded machine) renews no more: that fails, never
      // hangs. The bound is slack: a renewal late by seconds is the machine, not the standby.
      const renewed = () => within(new Promise<void>((resolve) => leader.once('renewed', () => resolve())), 10_000, 'a leader renewal');
      await renewed();
      const a = await received();
      const t0 = performance.now();
      let renewals = 0;
      while (performance.now() - t0 < timing.leaseDurationMs * 4) {
        await renewed();
        renewals++;
      }
      const b = await received();
      const seconds = (performance.now() - t0) / 1000;
      const standbySent: Record<string, number> = {};
      for (const [method, n] of b) {
        const leaderShare = method === 'LeaseKeepAlive' || method === 'Txn' ? renewals : 0;
        const d = n - (a.get(method) ?? 0) - leaderShare;
        if (d !== 0) standbySent[method] = d;
      }
      const { LeaseKeepAlive: keepalives = 0, ...rest } = standbySent;
      assert.deepEqual(rest, {}, `the idle standby made no read, campaign or watch request (${renewals} leader renewals in ${seconds.toFixed(1)} s)`);
      // Its entry's lease (TTL = the 2 s lease) is kept alive every third of a TTL, and no oftener.
      const entryTtlS = Math.ceil(timing.leaseDurationMs / 1000);
      assert.ok(keepalives <= Math.ceil(seconds / (entryTtlS / 3)) + 1, `${keepalives} keepalives in ${seconds.toFixed(1)} s`);
      assert.equal(standby.isLeader(), false);
      // Still awake: the leader's release reaches the standby through its watch alone.
      await leader.stop();
      await within(standby.elected(), timing.leaseDurationMs * 2, 'the standby after the release');
    } finally {
      await standby.stop();
      await leader.stop();
      await standbyStore.close();
      await leaderStore.close();
    }
  });

  it('a standby whose connection dies without a word still takes over after a release: the ping finds the dead connection', async () => {
    const proxy = new SilentProxy();
    await proxy.listen(server.port);
    const lock = `silent-${process.pid}`;
    const leaderStore = EtcdStore.fromUrl(server.url);
    const standbyStore = EtcdStore.fromUrl(`etcd://127.0.0.1:${proxy.port}`);
    const leader = new LeaderElector({ store: leaderStore, lock, identity: 'leader', ...timing }).on('storeError', () => {});
    const standby = new LeaderElector({ store: standbyStore, lock, identity: 'standby', ...timing }).on('storeError', () => {});
    try {
      leader.start();
      await within(leader.elected(), 10_000, 'the leader');
      standby.start();
      await waitFor(() => standby.leader()?.holder === 'leader', 10_000, 'the standby to see the leader');
      await sleep(500);
      proxy.silence();
      const releasedAt = performance.now();
      await leader.stop();
      // Its watch hears nothing and it sets no timer; the connection's ping goes unanswered
      // (10 s after the last answer, 10 s to answer: client.ts), the broken watch stream makes
      // the lock watch read again over a new connection, and it finds its entry at the front.
      // Its queue entry lives on meanwhile only if a keepalive got through: it may queue again.
      await within(standby.elected(), 40_000, 'the standby after the release, despite its dead connection');
      const tookS = (performance.now() - releasedAt) / 1000;
      assert.ok(tookS > 1, `it did not hear the release through the dead connection (${tookS.toFixed(1)} s)`);
    } finally {
      await standby.stop();
      await leader.stop();
      await standbyStore.close();
      await leaderStore.close();
      proxy.close();
    }
  });
});
