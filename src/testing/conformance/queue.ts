import assert from 'node:assert/strict';
import type { LeaseQueue, LeaseRecord, LeaseStore } from '../../core/store.js';
import { Handles, acquireWrite, keepWrite, uniqueLock, waitFor, type ConformanceOptions, runnerOf } from './context.js';

/**
 * queueTests is the queue-kind section of the suite (stores with `queue`: etcd's election,
 * ZooKeeper's LeaderLatch), in place of the compare-and-set section: the front candidate
 * leads, later ones wait in order, a release or a withdrawal moves the line on, terms strictly
 * increase, and `write` is a compare-and-set of the front entry that never acquires.
 *
 * Each candidate campaigns through a handle of its own that watches the lock, as an elector
 * does: a store keeps a waiting entry alive only while its lock is watched on that handle.
 */
export function queueTests(o: ConformanceOptions, caps: { batchRenew: boolean; list: boolean }): void {
  const { describe, it, before, after } = runnerOf(o);
  describe(`${o.name}: queue`, () => {
    const handles = new Handles(o.makeStore);
    const unwatch: (() => void)[] = [];
    after(async () => {
      for (const off of unwatch.splice(0)) off();
      await handles.closeAll();
    });

    /** candidate opens a handle that watches `lock` and counts its wake-ups. */
    const candidate = async (lock: string) => {
      const store = await handles.get();
      const woken = { count: 0 };
      if (store.watch) unwatch.push(store.watch(lock, () => woken.count++));
      return { store, queue: store.queue as LeaseQueue, woken };
    };
    const release = async (store: LeaseStore, record: LeaseRecord) => {
      const r = await store.write(record.lock, record.revision, keepWrite(null, record.leaseDurationMs, record.transitions));
      assert.ok(r.ok, `release of ${record.holder}`);
    };

    it('the first candidate leads at once, with a positive term; everyone reads it', async () => {
      const lock = uniqueLock('q-first');
      const a = await candidate(lock);
      const r = await a.queue.campaign(lock, acquireWrite('alice'));
      assert.ok(r.ok, 'alone in line: leads');
      assert.equal(r.record.holder, 'alice');
      assert.ok(r.record.term >= 1, `term ${r.record.term} must be ≥ 1`);
      const seen = await (await handles.get()).read(lock);
      assert.equal(seen?.holder, 'alice');
      assert.equal(seen?.term, r.record.term);
    });

    it('a later candidate waits behind the leader, as a value, and campaigning again keeps it waiting', async () => {
      const lock = uniqueLock('q-wait');
      const [a, b] = [await candidate(lock), await candidate(lock)];
      const ra = await a.queue.campaign(lock, acquireWrite('alice'));
      assert.ok(ra.ok);
      for (let i = 0; i < 2; i++) {
        const rb = await b.queue.campaign(lock, acquireWrite('bob'));
        assert.equal(rb.ok, false);
        if (!rb.ok && rb.current !== undefined) assert.equal(rb.current?.holder, 'alice');
      }
      assert.equal((await b.store.read(lock))?.holder, 'alice');
    });

    it('concurrent campaigns: exactly one leads', async () => {
      const lock = uniqueLock('q-race');
      const cs = await Promise.all(Array.from({ length: 6 }, () => candidate(lock)));
      const results = await Promise.all(cs.map((c, i) => c.queue.campaign(lock, acquireWrite(`c${i}`))));
      assert.equal(results.filter((r) => r.ok).length, 1);
    });

    it("the leader's release promotes the next in line, woken, with a higher term; a withdrawn candidate is skipped", async () => {
      const lock = uniqueLock('q-next');
      const [a, b, c] = [await candidate(lock), await candidate(lock), await candidate(lock)];
      const ra = await a.queue.campaign(lock, acquireWrite('alice'));
      assert.ok(ra.ok);
      assert.equal((await b.queue.campaign(lock, acquireWrite('bob'))).ok, false);
      assert.equal((await c.queue.campaign(lock, acquireWrite('carol'))).ok, false);
      await b.queue.withdraw(lock, 'bob');
      await release(a.store, ra.record);
      if (c.store.watch) await waitFor(() => c.woken.count > 0, 5000, 'carol woken at the front');
      const rc = await waitFor(async () => {
        const r = await c.queue.campaign(lock, acquireWrite('carol'));
        return r.ok ? r : undefined;
      }, 5000, 'carol to lead');
      assert.ok(rc.record.term > ra.record.term, `term ${rc.record.term} must exceed ${ra.record.term}`);
      assert.equal((await a.store.read(lock))?.holder, 'carol');
    });

    it('withdraw leaves a leader alone', async () => {
      const lock = uniqueLock('q-withdraw-leader');
      const a = await candidate(lock);
      const ra = await a.queue.campaign(lock, acquireWrite('alice'));
      assert.ok(ra.ok);
      await a.queue.withdraw(lock, 'alice');
      assert.equal((await a.store.read(lock))?.holder, 'alice');
      assert.ok((await a.store.write(lock, ra.record.revision, keepWrite('alice'))).ok, 'and it still renews');
    });

    it('terms strictly increase across successive leaders, through release and reopening', async () => {
      const lock = uniqueLock('q-terms');
      const terms: number[] = [];
      for (let i = 0; i < 4; i++) {
        const c = await candidate(lock);
        const r = await c.queue.campaign(lock, acquireWrite(`h${i}`));
        assert.ok(r.ok, `campaign ${i}`);
        terms.push(r.record.term);
        await release(c.store, r.record);
      }
      for (let i = 1; i < terms.length; i++) assert.ok(terms[i]! > terms[i - 1]!, `terms ${terms.join(',')} must strictly increase`);
    });

    it('write is a compare-and-set of the front entry: renewal on the current revision, stale refused, never an acquisition', async () => {
      const lock = uniqueLock('q-cas');
      const [a, b] = [await candidate(lock), await candidate(lock)];
      const ra = await a.queue.campaign(lock, acquireWrite('alice'));
      assert.ok(ra.ok);
      const renewed = await a.store.write(lock, ra.record.revision, keepWrite('alice'));
      assert.ok(renewed.ok);
      assert.equal(renewed.record.term, ra.record.term, 'a renewal keeps the term');
      const flagged = await b.store.write(lock, renewed.record.revision, { ...keepWrite('alice'), stepDownRequested: true });
      assert.ok(flagged.ok, 'the step-down flag is set by compare-and-set');
      assert.equal(flagged.record.term, ra.record.term);
      const stale = await a.store.write(lock, ra.record.revision, keepWrite('alice'));
      assert.equal(stale.ok, false, 'a write on a stale revision is refused');
      assert.equal((await b.store.write(lock, null, acquireWrite('bob'))).ok, false, 'write never acquires on a queue store');
      assert.equal((await b.store.write(lock, flagged.record.revision, acquireWrite('bob'))).ok, false, 'not even on the current revision');
      const seen = await b.store.read(lock);
      assert.equal(seen?.holder, 'alice');
      assert.equal(seen?.stepDownRequested, true);
    });

    it('a stale expected on a free lock is refused', async () => {
      const lock = uniqueLock('q-stale-free');
      const a = await candidate(lock);
      const ra = await a.queue.campaign(lock, acquireWrite('alice'));
      assert.ok(ra.ok);
      await release(a.store, ra.record);
      const stale = await a.store.write(lock, ra.record.revision, keepWrite('alice'));
      assert.equal(stale.ok, false);
      const after = await a.store.read(lock);
      assert.ok(after === null || after.holder === null, 'still free');
    });

    if (caps.batchRenew) {
      it('renewMany renews leaders in one call, each succeeding or failing on its own', async () => {
        const a = await handles.get();
        const locks = Array.from({ length: 20 }, (_, i) => uniqueLock(`q-batch${i}`));
        const held = await Promise.all(locks.map((l) => a.queue!.campaign(l, acquireWrite('alice'))));
        const reqs = held.map((r, i) => {
          assert.ok(r.ok);
          return { lock: locks[i]!, expected: i === 7 ? 'not-a-revision' : r.record.revision, next: keepWrite('alice') };
        });
        const results = await a.renewMany!(reqs);
        assert.equal(results.length, 20);
        results.forEach((r, i) => assert.equal(r.ok, i !== 7, `item ${i}`));
      });
    }

    if (caps.list) {
      it('list shows each lock once, with its leader', async () => {
        const lock = uniqueLock('q-list');
        const [a, b] = [await candidate(lock), await candidate(lock)];
        assert.ok((await a.queue.campaign(lock, acquireWrite('alice'))).ok);
        assert.equal((await b.queue.campaign(lock, acquireWrite('bob'))).ok, false);
        const mine = (await (await handles.get()).list!()).filter((r) => r.lock === lock);
        assert.deepEqual(mine.map((r) => r.holder), ['alice']);
      });
    }
  });
}
