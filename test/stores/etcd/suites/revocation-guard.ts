/**
 * etcdRevocationGuardSuite: a leader's lease revoked while it still renews (what a resumed raft
 * leader of a cluster does: RELIABILITY finding 4) must not let the next candidate lead before
 * that leader's deadline; a release must let it lead at once. The revocation is made to happen:
 * the test revokes the leader's lease itself, on one real etcd of the given line, with the guard
 * forced on (`?revocationGuard=on`; on a cluster it is on by itself: checked in cluster.ts).
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { Etcd3 } from 'etcd3';
import { LeaderElector } from '../../../../src/core/elector.js';
import { EtcdStore } from '../../../../src/stores/etcd/index.js';
import { EtcdServer, type EtcdLine } from '../../../../infra/servers/index.js';
import { waitFor } from '../../../harness/wait.js';

const TIMING = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 200 };

export function etcdRevocationGuardSuite(line: EtcdLine, guard: 'on' | 'off' = 'on'): void {
  let server: EtcdServer;
  let raw: Etcd3;
  const stores: EtcdStore[] = [];
  const electors: LeaderElector[] = [];
  let n = 0;
  const lockName = (what: string) => `guard-${what}-${process.pid}-${n++}`;

  const elector = (lock: string, identity: string) => {
    const store = EtcdStore.fromUrl(`${server.url}?revocationGuard=${guard}`);
    stores.push(store);
    const e = new LeaderElector({ store, lock, identity, ...TIMING });
    e.on('storeError', () => {});
    electors.push(e);
    return e;
  };
  /** electedAt resolves with the monotonic time `e` is elected. */
  const electedAt = (e: LeaderElector) => new Promise<number>((resolve) => e.once('elected', () => resolve(performance.now())));
  /** revokeUnder revokes the lease of `leader`'s key as a resumed raft leader would; returns the leader's deadline just before. */
  const revokeUnder = async (leader: LeaderElector) => {
    const leaseId = leader.leader()!.record!.metadata.etcdLease as string;
    // Just after a renewal: the deadline is then about a whole renew deadline away.
    await new Promise<void>((resolve) => leader.once('renewed', () => resolve()));
    const deadlineMs = leader.leadershipWindow()!.deadlineMs;
    await raw.leaseClient.leaseRevoke({ ID: leaseId });
    return { deadlineMs, revokedMs: performance.now() };
  };

  /** leaderAndOneBehind: a leads `lock`, b is queued right behind it; bElected resolves when b leads. */
  const leaderAndOneBehind = async (lock: string) => {
    const a = elector(lock, 'a').start();
    await a.elected();
    const b = elector(lock, 'b');
    const bElected = electedAt(b);
    b.start();
    await waitFor(() => b.leader()?.holder === 'a', 5000, 'b to queue behind a');
    return { a, b, bElected };
  };

  describe(`etcd (${line}): the revocation guard (${guard})`, () => {
    before(async () => {
      server = await new EtcdServer(undefined, { line }).start();
      raw = new Etcd3({ hosts: server.endpoint });
    });
    afterEach(async () => {
      await Promise.all(electors.splice(0).map((e) => e.stop().catch(() => {})));
      await Promise.all(stores.splice(0).map((s) => s.close().catch(() => {})));
    });
    after(async () => {
      raw.close();
      await server.stop();
    });

    it('auto: off on a single member (it cannot be deposed)', async () => {
      const store = EtcdStore.fromUrl(server.url);
      stores.push(store);
      assert.equal(await store.revocationGuard.enabled(), false);
    });

    it('a leader whose lease is revoked under it: the one behind leads only after that leader’s deadline', async () => {
      const lock = lockName('behind');
      const { a, bElected } = await leaderAndOneBehind(lock);
      const { deadlineMs, revokedMs } = await revokeUnder(a);
      const atMs = await bElected;
      assert.ok(deadlineMs - revokedMs > TIMING.renewDeadlineMs / 2, `the revocation came ${Math.round(deadlineMs - revokedMs)} ms before a's deadline`);
      assert.ok(atMs >= deadlineMs, `b led ${Math.round(deadlineMs - atMs)} ms before a's deadline (revoked ${Math.round(atMs - revokedMs)} ms earlier)`);
    });

    it('a fresh candidate on a lock whose leader’s lease was revoked waits for that deadline too', async () => {
      const lock = lockName('fresh');
      const a = elector(lock, 'a').start();
      await a.elected();
      // a leaves once it hears its key is gone (else it campaigns again, and waits the same).
      a.once('stopped', () => void a.stop());
      const { deadlineMs } = await revokeUnder(a);
      await waitFor(() => !a.isLeader(), 5000, 'a to hear its key is gone');
      const c = elector(lock, 'c');
      const cElected = electedAt(c);
      c.start();
      const atMs = await cElected;
      assert.ok(atMs >= deadlineMs, `c led ${Math.round(deadlineMs - atMs)} ms before a's deadline`);
    });

    it('after a release the one behind leads at once, and so does a fresh candidate on a released lock', async () => {
      const lock = lockName('release');
      const { a, b, bElected } = await leaderAndOneBehind(lock);
      const stopMs = performance.now();
      await a.stop();
      const handoverMs = (await bElected) - stopMs;
      assert.ok(handoverMs < TIMING.renewDeadlineMs / 4, `b led ${Math.round(handoverMs)} ms after a's release`);
      // b releases too; a fresh candidate then finds the lock released.
      await b.stop();
      const d = elector(lock, 'd');
      const dElected = electedAt(d);
      const startMs = performance.now();
      d.start();
      const freshMs = (await dElected) - startMs;
      assert.ok(freshMs < TIMING.renewDeadlineMs / 4, `d led ${Math.round(freshMs)} ms after it started on a released lock`);
    });
  });
}
