/**
 * The ZooKeeper handover reads nothing on the waiter's side: the entry right behind the front is
 * marked at the front by the front node's deletion event, and its campaign claims it with one
 * multi (check its latch node, write its record) and no read of the line. Counted by the calls
 * the handles make to the server, against a real ZooKeeper.
 */
import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LeaderElector } from '../../../src/core/elector.js';
import type { LeaseStore, LeaseWrite } from '../../../src/core/store.js';
import { ZooKeeperStore } from '../../../src/stores/zookeeper/index.js';
import { ZkSession } from '../../../src/stores/zookeeper/session.js';
import { ZooKeeperServer } from '../../../infra/servers/index.js';
import { sleep, waitFor } from '../../harness/wait.js';

const server = await new ZooKeeperServer().start();
after(() => server.stop());

const stores: LeaseStore[] = [];
const electors: LeaderElector[] = [];
afterEach(async () => {
  await Promise.all(electors.splice(0).map((e) => e.stop()));
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

async function handle(): Promise<LeaseStore> {
  const s = ZooKeeperStore.fromUrl(`zk://127.0.0.1:${server.port}/claim`);
  stores.push(s);
  return s;
}

let n = 0;
const uniqueLock = (what: string) => `claim-${what}-${process.pid}-${n++}`;

function acquire(holder: string): LeaseWrite {
  const now = Date.now();
  return { holder, newTerm: true, leaseDurationMs: 2000, acquiredAt: now, renewedAt: now, transitions: 1, stepDownRequested: false, metadata: {} };
}
const release = (): LeaseWrite => ({ ...acquire('x'), holder: null, newTerm: false });


/** counting records the name of every call any handle makes to ZooKeeper while it is on. */
function countCalls(): { calls: string[]; stop(): void } {
  const calls: string[] = [];
  const original = ZkSession.prototype.call;
  ZkSession.prototype.call = function (this: ZkSession, what: string, fn: never) {
    calls.push(what);
    return original.call(this, what, fn);
  } as typeof original;
  return { calls, stop: () => void (ZkSession.prototype.call = original) };
}

describe('zookeeper: the next in line claims with one write and no read', () => {
  it("the front node's deletion wakes the entry behind it; its campaign is one multi", async () => {
    const lock = uniqueLock('event');
    const [ha, hb] = [await handle(), await handle()];
    const ra = await ha.queue!.campaign(lock, acquire('a'));
    assert.ok(ra.ok);
    assert.equal((await hb.queue!.campaign(lock, acquire('b'))).ok, false);
    let woken = 0;
    hb.watch!(lock, () => woken++);
    await sleep(300); // the watch is armed
    assert.equal(woken, 0);
    const counting = countCalls();
    try {
      assert.ok((await ha.write(lock, ra.record.revision, release())).ok);
      await waitFor(() => woken > 0, 3000, 'b woken');
      const won = await hb.queue!.campaign(lock, acquire('b'));
      assert.ok(won.ok, 'b leads');
      assert.ok(won.record.term > ra.record.term);
      // After the claim the new leader's watch re-arms on its own node ('watch'): not on the way.
      assert.deepEqual(counting.calls.slice(0, 2), ['release', `campaign "${lock}"`], 'the release, then the claim');
      assert.deepEqual(counting.calls.slice(2).filter((c) => c !== 'watch'), [], 'and no read at all');
    } finally {
      counting.stop();
    }
    const seen = await ha.read(lock);
    assert.equal(seen?.holder, 'b');
    assert.equal(seen?.term, (await hb.read(lock))?.term);
  });

  it('the deletion of a predecessor that was not at the front leads nobody', async () => {
    const lock = uniqueLock('middle');
    const [ha, hx, hb] = [await handle(), await handle(), await handle()];
    const ra = await ha.queue!.campaign(lock, acquire('a'));
    assert.ok(ra.ok);
    assert.equal((await hx.queue!.campaign(lock, acquire('x'))).ok, false);
    assert.equal((await hb.queue!.campaign(lock, acquire('b'))).ok, false);
    let woken = 0;
    hb.watch!(lock, () => woken++);
    await sleep(300);
    await hx.queue!.withdraw(lock, 'x');
    await sleep(500);
    assert.equal(woken, 0, 'b is still behind a');
    const still = await hb.queue!.campaign(lock, acquire('b'));
    assert.equal(still.ok, false);
    assert.ok((await ha.write(lock, ra.record.revision, release())).ok);
    await waitFor(() => woken > 0, 3000, 'b woken once a released');
    assert.ok((await hb.queue!.campaign(lock, acquire('b'))).ok);
  });

  it('electors hand over with no overlap', async () => {
    const lock = uniqueLock('electors');
    const timing = { leaseDurationMs: 2_000, renewDeadlineMs: 1_400, retryPeriodMs: 200 };
    const make = (store: LeaseStore, identity: string) => {
      const e = new LeaderElector({ store, lock, identity, ...timing });
      e.on('storeError', () => {});
      electors.push(e);
      return e;
    };
    const a = make(await handle(), 'a').start();
    const first = await a.elected();
    const b = make(await handle(), 'b').start();
    await waitFor(() => b.leader()?.holder === 'a', 3000, 'b sees a');
    let overlap = 0;
    const check = setInterval(() => (a.isLeader() && b.isLeader() ? overlap++ : 0), 1);
    const elected = b.elected();
    await a.stop();
    const ev = await elected;
    clearInterval(check);
    assert.equal(overlap, 0);
    assert.ok(ev.term > first.term);
    assert.equal((await b.store.read(lock))?.holder, 'b');
  });
});
