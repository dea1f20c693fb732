import assert from 'node:assert/strict';
import { LeaderElector } from '../../core/elector.js';
import type { LeaseRecord } from '../../core/store.js';
import { Handles, acquire, acquireWrite, keepWrite, uniqueLock, waitFor, type ConformanceOptions, runnerOf } from './context.js';

/**
 * notifyTests registers notification: a watcher on another handle hears about acquisition and
 * release; an unsubscribed one hears nothing; a leader whose lock is taken hears it from the feed.
 */
export function notifyTests(o: ConformanceOptions): void {
  const { describe, it, after } = runnerOf(o);
  describe(`${o.name}: notification`, () => {
    const handles = new Handles(o.makeStore);
    after(() => handles.closeAll());

    it('a watcher on another handle is told of acquisition and release, without polling', async () => {
      const lock = uniqueLock('watch');
      const [writer, watcher] = [await handles.get(), await handles.get()];
      const seen: (LeaseRecord | null | undefined)[] = [];
      const off = watcher.watch!(lock, (r) => seen.push(r));
      try {
        await new Promise((r) => setTimeout(r, 200)); // let a subscription settle
        const r = await acquire(writer, lock, null, acquireWrite('alice'));
        assert.ok(r.ok);
        await waitFor(() => seen.length > 0, 3000, 'notification of acquisition');
        const n = seen.length;
        const cur = (await writer.read(lock))!;
        assert.ok((await writer.write(lock, cur.revision, keepWrite(null))).ok);
        await waitFor(() => seen.length > n, 3000, 'notification of release');
        const last = seen[seen.length - 1];
        if (last !== undefined) assert.ok(last === null || last.holder === null, 'release is reported as free');
      } finally {
        off();
      }
    });

    it('a leader learns from the feed, not at its next renewal, that its lock was taken (compare-and-set stores)', async (t) => {
      const [own, other] = [await handles.get(), await handles.get()];
      if (own.queue) return t.skip('a queue store: nobody takes a lock over by writing it');
      const lock = uniqueLock('taken');
      const e = new LeaderElector({ store: own, lock, identity: 'alice', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 });
      try {
        e.start();
        await e.elected();
        // Two renewals first: a store may read the echoes of a leader's own renewals on a short
        // path (Redis, PostgreSQL); a foreign write after them must still be heard whole.
        await new Promise((r) => e.once('renewed', r));
        await new Promise((r) => e.once('renewed', r));
        const cur = await other.read(lock);
        const stopped = new Promise<{ reason: string }>((r) => e.once('stopped', r));
        const t0 = Date.now();
        assert.ok((await other.write(lock, cur!.revision, acquireWrite('bob'))).ok);
        assert.equal((await stopped).reason, 'lost');
        assert.ok(Date.now() - t0 < 1_000, `noticed after ${Date.now() - t0} ms (the next renewal was ~2 s away)`);
      } finally {
        await e.stop();
      }
    });

    it('unsubscribed watchers hear nothing more', async () => {
      const lock = uniqueLock('unwatch');
      const [writer, watcher] = [await handles.get(), await handles.get()];
      let calls = 0;
      const off = watcher.watch!(lock, () => calls++);
      off();
      assert.ok((await acquire(writer, lock, null, acquireWrite('alice'))).ok);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(calls, 0);
    });
  });
}
