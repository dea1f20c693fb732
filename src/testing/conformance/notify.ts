import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import type { LeaseRecord } from '../../core/store.js';
import { Handles, acquire, acquireWrite, keepWrite, uniqueLock, waitFor, type ConformanceOptions } from './context.js';

/** notifyTests registers notification: a watcher on another handle hears about acquisition and release; an unsubscribed one hears nothing. */
export function notifyTests(o: ConformanceOptions): void {
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
