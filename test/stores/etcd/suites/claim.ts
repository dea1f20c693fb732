/**
 * etcdClaimSuite: the etcd handover with no write of the waiter's own — the candidate right
 * behind the front leads on the front key's delete event (Election.claim, LockWatch). Checked
 * against a real etcd of the given line by its global revision, read with that line's etcdctl;
 * the revision moves with every write and nothing else: the claim leaves it where the release
 * put it, the leader's first renewal writes the record it owed.
 */
import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { LeaderElector } from '../../../../src/core/elector.js';
import type { LeaseStore, LeaseWrite } from '../../../../src/core/store.js';
import { EtcdStore } from '../../../../src/stores/etcd/index.js';
import { etcdBinary, EtcdServer, type EtcdLine } from '../../../../infra/servers/index.js';
import { sleep, waitFor } from '../../../harness/wait.js';

const TIMING = { leaseDurationMs: 2_000, renewDeadlineMs: 1_400, retryPeriodMs: 200 };

// Set by etcdClaimSuite before any test runs (each test file is its own process).
let ETCDCTL: string;
let server: EtcdServer;

const stores: LeaseStore[] = [];
const electors: LeaderElector[] = [];

async function handle(): Promise<LeaseStore> {
  const s = EtcdStore.fromUrl(server.url);
  stores.push(s);
  return s;
}

let n = 0;
const uniqueLock = (what: string) => `claim-${what}-${process.pid}-${n++}`;

function acquire(holder: string, acquiredAt = Date.now()): LeaseWrite {
  return { holder, newTerm: true, leaseDurationMs: 2000, acquiredAt, renewedAt: acquiredAt, transitions: 1, stepDownRequested: false, metadata: {} };
}
const release = (): LeaseWrite => ({ ...acquire('x'), holder: null, newTerm: false });

/** revision is etcd's global revision, as etcdctl reads it (a read does not move it). */
async function revision(): Promise<number> {
  const { stdout } = await promisify(execFile)(ETCDCTL, ['--endpoints', server.endpoint, 'get', 'none', '-w', 'json'], { env: { ...process.env, ETCDCTL_API: '3' } });
  return Number((JSON.parse(stdout) as { header: { revision: number } }).header.revision);
}

export async function etcdClaimSuite(line: EtcdLine): Promise<void> {
  ETCDCTL = etcdBinary(line, 'etcdctl');
  server = await new EtcdServer(undefined, { line }).start();
  after(() => server.stop());
  afterEach(async () => {
    await Promise.all(electors.splice(0).map((e) => e.stop()));
    await Promise.all(stores.splice(0).map((s) => s.close()));
  });

  describe(`etcd (${line}): the next in line leads with no write`, () => {
    it('on the delete event: no round trip, no write; the first renewal writes the record it owed', async () => {
      const lock = uniqueLock('event');
      const [ha, hb] = [await handle(), await handle()];
      const ra = await ha.queue!.campaign(lock, acquire('a'));
      assert.ok(ra.ok);
      const queuedAt = Date.now() - 60_000; // so the owed value is told apart from the queued one
      const rb = await hb.queue!.campaign(lock, acquire('b', queuedAt));
      assert.equal(rb.ok, false);
      let woken = 0;
      hb.watch!(lock, () => woken++);
      await sleep(200);
      assert.equal(woken, 0);

      const released = await ha.write(lock, ra.record.revision, release());
      assert.ok(released.ok);
      const releaseRevision = Number(released.record.revision.split(':')[1]);
      await waitFor(() => woken > 0, 3000, 'b woken by the delete event');
      const claimAt = Date.now();
      const won = await hb.queue!.campaign(lock, { ...acquire('b', claimAt), transitions: 2 }, { claimWithinMs: 1000 });
      assert.ok(won.ok, 'b leads');
      assert.ok(won.leaseAgeMs !== undefined && won.leaseAgeMs >= 0 && won.leaseAgeMs < 1000, `claimed on the lease it knew (age ${won.leaseAgeMs})`);
      assert.ok(won.record.term > ra.record.term, 'a higher term');
      assert.equal(won.record.holder, 'b');
      assert.equal(won.record.acquiredAt, claimAt, 'the elector is handed the record as it will be');
      assert.equal(await revision(), releaseRevision, 'the claim wrote nothing');
      const stored = await ha.read(lock);
      assert.equal(stored?.holder, 'b');
      assert.equal(stored?.term, won.record.term);
      assert.equal(stored?.acquiredAt, queuedAt, 'until the first renewal the key holds the value it queued with');

      const renewal = { ...acquire('b', claimAt), newTerm: false, transitions: 2, renewedAt: Date.now() };
      const renewed = await hb.write(lock, won.record.revision, renewal);
      assert.ok(renewed.ok, 'the first renewal succeeds');
      assert.equal(await revision(), releaseRevision + 1, 'and writes the owed value: one write');
      const after1 = await ha.read(lock);
      assert.equal(after1?.acquiredAt, claimAt, 'now the stored record says when b took over');
      assert.equal(after1?.transitions, 2);
      assert.equal(after1?.revision, renewed.record.revision, "the renewal's record is the stored one");
      const renewed2 = await hb.write(lock, renewed.record.revision, { ...renewal, renewedAt: Date.now() });
      assert.ok(renewed2.ok);
      assert.equal(await revision(), releaseRevision + 1, 'later renewals write nothing (keepalives)');
    });

    it('a claim outside claimWithinMs refreshes the lease first: one round trip, still no write', async () => {
      const lock = uniqueLock('old');
      const [ha, hb] = [await handle(), await handle()];
      const ra = await ha.queue!.campaign(lock, acquire('a'));
      assert.ok(ra.ok);
      assert.equal((await hb.queue!.campaign(lock, acquire('b'))).ok, false);
      let woken = 0;
      hb.watch!(lock, () => woken++);
      await sleep(300);
      const released = await ha.write(lock, ra.record.revision, release());
      assert.ok(released.ok);
      await waitFor(() => woken > 0, 3000, 'b woken');
      // b's last checked refresh (its campaign) is over 300 ms old: the claim must send its own.
      const callStart = performance.now();
      const won = await hb.queue!.campaign(lock, acquire('b'), { claimWithinMs: 100 });
      const callMs = performance.now() - callStart;
      assert.ok(won.ok);
      // Counted from a keepalive sent during this call, however slow the machine made the call.
      assert.ok(won.leaseAgeMs !== undefined && won.leaseAgeMs <= callMs, `counted from the keepalive just sent (age ${won.leaseAgeMs} ms, call ${callMs} ms)`);
      assert.equal(await revision(), Number(released.record.revision.split(':')[1]), 'no write');
    });

    it('the deletion of a predecessor that was not at the front wakes nobody and leads nobody', async () => {
      const lock = uniqueLock('middle');
      const [ha, hx, hb] = [await handle(), await handle(), await handle()];
      const ra = await ha.queue!.campaign(lock, acquire('a'));
      assert.ok(ra.ok);
      assert.equal((await hx.queue!.campaign(lock, acquire('x'))).ok, false);
      assert.equal((await hb.queue!.campaign(lock, acquire('b'))).ok, false);
      let woken = 0;
      hb.watch!(lock, () => woken++);
      await sleep(300);
      await hx.queue!.withdraw(lock, 'x'); // x, right ahead of b, leaves; a still leads
      await sleep(500);
      assert.equal(woken, 0, 'b is still behind a');
      const still = await hb.queue!.campaign(lock, acquire('b'), { claimWithinMs: 1000 });
      assert.equal(still.ok, false, 'and does not lead');
      assert.equal(!still.ok && still.current?.holder, 'a');
      assert.ok((await ha.write(lock, ra.record.revision, release())).ok);
      await waitFor(() => woken > 0, 3000, 'b woken once a released');
      assert.ok((await hb.queue!.campaign(lock, acquire('b'), { claimWithinMs: 1000 })).ok);
    });

    it('electors: the standby is elected on the release, never both leading, and the record is right', async () => {
      const lock = uniqueLock('electors');
      const [ha, hb, hc] = [await handle(), await handle(), await handle()];
      const make = (store: LeaseStore, identity: string) => {
        const e = new LeaderElector({ store, lock, identity, ...TIMING });
        e.on('storeError', () => {});
        electors.push(e);
        return e;
      };
      const a = make(ha, 'a').start();
      const first = await a.elected();
      const b = make(hb, 'b').start();
      await waitFor(() => b.leader()?.holder === 'a', 3000, 'b sees a');
      let overlap = 0;
      const check = setInterval(() => (a.isLeader() && b.isLeader() ? overlap++ : 0), 1);
      const stoppedAt = Date.now();
      const elected = b.elected();
      await a.stop();
      const ev = await elected;
      clearInterval(check);
      assert.equal(overlap, 0);
      assert.ok(ev.term > first.term);
      // The first renewal, at once after the claim, writes b's record.
      const seen = await waitFor(async () => {
        const r = await hc.read(lock);
        return r && r.acquiredAt >= stoppedAt ? r : undefined;
      }, 3000, "b's record written");
      assert.equal(seen.holder, 'b');
      assert.equal(seen.term, ev.term);
      assert.equal(seen.transitions, 2, "a's transition plus b's");
      assert.equal(seen.metadata.instance, b.leader()?.record?.metadata.instance);
      assert.ok(b.isLeader());
    });
  });
}
