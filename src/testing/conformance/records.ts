import assert from 'node:assert/strict';
import type { LeaseStore } from '../../core/store.js';
import { Handles, acquireWrite, keepWrite, uniqueLock, type ConformanceOptions, runnerOf } from './context.js';

/**
 * recordTests registers the atomic record operations: create-if-absent, compare-and-set, release,
 * the step-down flag, batch renewal (`batchRenew`) and listing (`list`).
 */
export function recordTests(o: ConformanceOptions, caps: { batchRenew: boolean; list: boolean; serverExpiry: boolean }): void {
  const { describe, it, before, after } = runnerOf(o);
  describe(`${o.name}: create and compare-and-set`, () => {
    const handles = new Handles(o.makeStore);
    let a: LeaseStore;
    let b: LeaseStore;
    before(async () => {
      a = await handles.get();
      b = await handles.get();
    });
    after(() => handles.closeAll());

    it('reads null for a lock never written', async () => {
      assert.equal(await a.read(uniqueLock('none')), null);
    });

    it('create-if-absent succeeds once and returns the record with a positive term', async () => {
      const lock = uniqueLock('create');
      const r = await a.write(lock, null, acquireWrite('alice'));
      assert.equal(r.ok, true);
      if (!r.ok) return;
      assert.equal(r.record.lock, lock);
      assert.equal(r.record.holder, 'alice');
      assert.ok(r.record.term >= 1, `term ${r.record.term} must be ≥ 1`);
      assert.equal(typeof r.record.revision, 'string');
      const seen = await b.read(lock);
      assert.equal(seen?.holder, 'alice');
      assert.equal(seen?.term, r.record.term);
      assert.equal(seen?.metadata.hostname, 'conformance');
    });

    it('a second create-if-absent loses the race as a value, not an exception', async () => {
      const lock = uniqueLock('create2');
      assert.equal((await a.write(lock, null, acquireWrite('alice'))).ok, true);
      const r = await b.write(lock, null, acquireWrite('bob'));
      assert.equal(r.ok, false);
      if (!r.ok && r.current !== undefined) assert.equal(r.current?.holder, 'alice');
      assert.equal((await a.read(lock))?.holder, 'alice');
    });

    it('concurrent create-if-absent: exactly one of many wins', async () => {
      const lock = uniqueLock('race');
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? a : b).write(lock, null, acquireWrite(`c${i}`))),
      );
      assert.equal(results.filter((r) => r.ok).length, 1);
    });

    it('compare-and-set succeeds on the current revision and fails on a stale one', async () => {
      const lock = uniqueLock('cas');
      const first = await a.write(lock, null, acquireWrite('alice'));
      assert.ok(first.ok);
      const renewed = await a.write(lock, first.record.revision, keepWrite('alice'));
      assert.ok(renewed.ok);
      assert.equal(renewed.record.term, first.record.term, 'a renewal keeps the term');
      if (!caps.serverExpiry) {
        // Standbys judge expiry by watching the revision: a renewal must change it.
        assert.notEqual(renewed.record.revision, first.record.revision, 'every write changes the revision');
      }
      const stale = await b.write(lock, first.record.revision, acquireWrite('bob'));
      assert.equal(stale.ok, false);
      assert.equal((await b.read(lock))?.holder, 'alice');
    });

    it('a stale expected on a free lock is refused', async () => {
      const lock = uniqueLock('stale-free');
      const first = await a.write(lock, null, acquireWrite('alice'));
      assert.ok(first.ok);
      assert.ok((await a.write(lock, first.record.revision, keepWrite(null))).ok);
      // The lock is free now, at another revision (or gone): the old revision must not win it.
      const stale = await b.write(lock, first.record.revision, acquireWrite('bob', 5000, 2));
      assert.equal(stale.ok, false);
      const after = await b.read(lock);
      assert.ok(after === null || after.holder === null, 'the lock is still free');
    });

    it('concurrent acquisitions of a released lease: exactly one wins', async () => {
      const lock = uniqueLock('cas-race');
      const first = await a.write(lock, null, acquireWrite('alice'));
      assert.ok(first.ok);
      assert.ok((await a.write(lock, first.record.revision, keepWrite(null))).ok);
      const free = await b.read(lock);
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? a : b).write(lock, free ? free.revision : null, acquireWrite(`c${i}`, 5000, 2))),
      );
      assert.equal(results.filter((r) => r.ok).length, 1);
    });

    it('release keeps the term and frees the lease; the next acquisition gets a higher term', async () => {
      const lock = uniqueLock('release');
      const first = await a.write(lock, null, acquireWrite('alice'));
      assert.ok(first.ok);
      const released = await a.write(lock, first.record.revision, keepWrite(null));
      assert.ok(released.ok);
      const free = await b.read(lock);
      assert.ok(free === null || free.holder === null, 'released lease has no holder');
      const next = await b.write(lock, free ? free.revision : null, acquireWrite('bob', 5000, 2));
      assert.ok(next.ok);
      assert.ok(next.record.term > first.record.term, `term ${next.record.term} must exceed ${first.record.term}`);
    });

    it('the step-down flag round-trips and keeps holder and term', async () => {
      const lock = uniqueLock('flag');
      const first = await a.write(lock, null, acquireWrite('alice'));
      assert.ok(first.ok);
      const flagged = await b.write(lock, first.record.revision, { ...keepWrite('alice'), stepDownRequested: true });
      assert.ok(flagged.ok);
      const seen = await a.read(lock);
      assert.equal(seen?.stepDownRequested, true);
      assert.equal(seen?.holder, 'alice');
      assert.equal(seen?.term, first.record.term);
    });

    if (caps.batchRenew) {
      it('renewMany renews many leases in one call, each succeeding or failing on its own', async () => {
        const locks = Array.from({ length: 50 }, (_, i) => uniqueLock(`batch${i}`));
        const held = await Promise.all(locks.map((l) => a.write(l, null, acquireWrite('alice'))));
        const reqs = held.map((r, i) => {
          assert.ok(r.ok);
          return { lock: locks[i]!, expected: i === 7 ? 'not-a-revision' : r.record.revision, next: keepWrite('alice') };
        });
        const results = await a.renewMany!(reqs);
        assert.equal(results.length, 50);
        results.forEach((r, i) => assert.equal(r.ok, i !== 7, `item ${i}`));
        results.forEach((r, i) => r.ok && assert.equal(r.record.term, (held[i] as { record: { term: number } }).record.term));
      });
    }

    if (caps.list) {
      it('list includes held locks', async () => {
        const lock = uniqueLock('list');
        assert.ok((await a.write(lock, null, acquireWrite('alice'))).ok);
        const all = await b.list!();
        assert.ok(all.some((r) => r.lock === lock && r.holder === 'alice'));
      });
    }
  });
}
