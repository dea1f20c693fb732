import assert from 'node:assert/strict';
import { LeaderElector } from '../../core/elector.js';
import type { LeaseRecord, LeaseStore, RevisionRenewal } from '../../core/store.js';
import { Handles, acquireWrite, keepWrite, uniqueLock, type ConformanceOptions, runnerOf } from './context.js';

/**
 * renewRevisionsTests registers the renewal-only batch (`renewRevisions`, for stores that have
 * it): each item is a compare on its own lock's revision, a success changes only renewedAt and
 * the revision, and a failure is that item's alone.
 */
export function renewRevisionsTests(o: ConformanceOptions): void {
  const { describe, it, before, after } = runnerOf(o);
  describe(`${o.name}: renewal-only batch (renewRevisions)`, () => {
    const handles = new Handles(o.makeStore);
    let a: LeaseStore;
    let b: LeaseStore;
    before(async () => {
      a = await handles.get();
      b = await handles.get();
    });
    after(() => handles.closeAll());

    const holdMany = async (n: number, prefix: string): Promise<LeaseRecord[]> => {
      const records: LeaseRecord[] = [];
      // In slices: some stores bound how many writes one handle has in flight.
      for (let i = 0; i < n; i += 50) {
        const slice = Array.from({ length: Math.min(50, n - i) }, (_, k) => a.write(uniqueLock(`${prefix}${i + k}`), null, acquireWrite('alice', 7_000, 3)));
        for (const r of await Promise.all(slice)) {
          assert.ok(r.ok);
          records.push(r.record);
        }
      }
      return records;
    };
    const renewalOf = (r: LeaseRecord, renewedAt: number, expected = r.revision): RevisionRenewal => ({ lock: r.lock, expected, renewedAt, leaseDurationMs: r.leaseDurationMs });

    it('renews every lease at its revision and leaves the rest of each record as it was', async () => {
      // More than one script's or statement's worth on stores that split a batch (Redis: 500).
      const held = await holdMany(510, 'rr');
      const renewedAt = Date.now() + 1234;
      const revisions = await a.renewRevisions!(held.map((r) => renewalOf(r, renewedAt)));
      assert.equal(revisions.length, held.length);
      for (const [i, r] of held.entries()) {
        const revision = revisions[i];
        assert.equal(typeof revision, 'string', `item ${i}`);
        assert.notEqual(revision, r.revision, `item ${i}: a renewal changes the revision`);
      }
      for (const i of [0, 7, 499, 500, 509]) {
        const seen = await b.read(held[i]!.lock);
        assert.deepEqual(seen, { ...held[i]!, renewedAt, revision: revisions[i] }, `item ${i}`);
      }
      // The compare is on the new revision now: the old one loses, the new one wins.
      const lock = held[3]!.lock;
      assert.equal((await b.write(lock, held[3]!.revision, keepWrite('bob'))).ok, false);
      assert.equal((await b.write(lock, revisions[3]!, keepWrite('alice', 7_000, 3))).ok, true);
    });

    it('answers null for an item whose lease moved, was freed, is absent or was named with a bad revision — and only for it', async () => {
      const held = await holdMany(6, 'rrfail');
      const moved = await b.write(held[1]!.lock, held[1]!.revision, { ...keepWrite('alice', 7_000, 3), stepDownRequested: true });
      assert.ok(moved.ok);
      const freed = await b.write(held[2]!.lock, held[2]!.revision, keepWrite(null));
      assert.ok(freed.ok);
      const now = Date.now();
      const items = [
        renewalOf(held[0]!, now),
        renewalOf(held[1]!, now), // its revision changed (the step-down flag was set)
        renewalOf(held[2]!, now), // released
        { lock: uniqueLock('rrabsent'), expected: held[3]!.revision, renewedAt: now, leaseDurationMs: 7_000 },
        renewalOf(held[4]!, now, `${held[4]!.revision}0`),
        renewalOf(held[5]!, now),
      ];
      const revisions = await a.renewRevisions!(items);
      assert.deepEqual(revisions.map((r) => typeof r), ['string', 'object', 'object', 'object', 'object', 'string']);
      assert.deepEqual(revisions.slice(1, 5), [null, null, null, null]);
      assert.deepEqual(await b.read(held[1]!.lock), moved.record);
      assert.equal((await b.read(held[4]!.lock))?.revision, held[4]!.revision);
    });

    it('renews a lease named twice in one batch once: the second item compares on a revision that is gone', async () => {
      const [r] = await holdMany(1, 'rrtwice');
      const revisions = await a.renewRevisions!([renewalOf(r!, Date.now()), renewalOf(r!, Date.now())]);
      assert.equal(typeof revisions[0], 'string');
      assert.equal(revisions[1], null);
      assert.equal((await b.read(r!.lock))?.revision, revisions[0]);
    });

    it("a leader renewing this way keeps its lease: a standby on the same handle and one on another never take over", async () => {
      // Electors renew through renewRevisions. Each renewal must change the revision a standby
      // reads (or it counts the lease expired) and, on a server-expiry store, restart the
      // server's timer (or the record vanishes). One standby shares the leader's handle.
      const lease = Math.max(600, o.minLeaseMs ?? 600);
      const timing = { leaseDurationMs: lease, renewDeadlineMs: Math.round(lease * 0.6), retryPeriodMs: Math.round(lease / 8) };
      const lock = uniqueLock('rrhold');
      const make = (store: LeaseStore, identity: string) => new LeaderElector({ store, lock, identity, ...timing }).on('storeError', () => {});
      const leader = make(a, 'alice');
      leader.start();
      await leader.elected();
      const standbys = [make(a, 'bob'), make(b, 'carol')];
      let takenOver = 0;
      let lost = 0;
      leader.on('stopped', () => lost++);
      for (const s of standbys) s.on('elected', () => takenOver++).start();
      await new Promise((r) => setTimeout(r, lease * 4));
      try {
        assert.equal(lost, 0, 'the leader lost its lease while renewing');
        assert.equal(takenOver, 0, 'a standby took over a lease that was being renewed');
        assert.equal(leader.isLeader(), true);
      } finally {
        await Promise.all([leader, ...standbys].map((e) => e.stop()));
      }
    });

    it('keeps a step-down flag a renewal finds (the record is renewed as it is)', async () => {
      const [r] = await holdMany(1, 'rrflag');
      const flagged = await b.write(r!.lock, r!.revision, { ...keepWrite('alice', 7_000, 3), stepDownRequested: true });
      assert.ok(flagged.ok);
      const [revision] = await a.renewRevisions!([renewalOf(flagged.record, Date.now())]);
      assert.equal(typeof revision, 'string');
      const seen = await b.read(r!.lock);
      assert.equal(seen?.stepDownRequested, true);
      assert.equal(seen?.revision, revision);
    });
  });
}
