import assert from 'node:assert/strict';
import { StoreUnavailableError } from '../../core/errors.js';
import type { LeaseStore } from '../../core/store.js';
import { Handles, acquire as acquireOn, acquireWrite, faultsOf, keepWrite, uniqueLock, waitFor, type ConformanceOptions, runnerOf } from './context.js';

/**
 * fencingTests registers the fencing-token rule: terms strictly increase per lock and are never
 * reused — across releases and reopened handles always; after an operator deletes the record
 * (with `faults.deleteRecord`); across a server restart (with `faults.restart`, or `kill` and
 * `start`). A store that hands out a term it handed out before fails here.
 */
export function fencingTests(o: ConformanceOptions): void {
  const { describe, it, after } = runnerOf(o);
  const f = faultsOf(o);
  const handles = new Handles(o.makeStore);
  /** acquire takes `lock` from whatever state it is in (absent or released) and returns the term. */
  const acquire = async (s: LeaseStore, lock: string, who: string): Promise<{ term: number; revision: string }> => {
    const cur = await s.read(lock);
    assert.ok(cur === null || cur.holder === null, `${lock} is free before ${who} acquires`);
    const r = await acquireOn(s, lock, cur ? cur.revision : null, acquireWrite(who));
    assert.ok(r.ok, `${who} acquires ${lock}`);
    return { term: r.record.term, revision: r.record.revision };
  };
  const release = async (s: LeaseStore, lock: string, revision: string) => {
    assert.ok((await s.write(lock, revision, keepWrite(null))).ok, `release of ${lock}`);
  };
  const increasing = (terms: number[]) => {
    for (let i = 1; i < terms.length; i++) assert.ok(terms[i]! > terms[i - 1]!, `terms ${terms.join(',')} must strictly increase`);
  };
  /** back waits until the store answers again after a restart, on a fresh handle. */
  const back = async (): Promise<LeaseStore> => {
    const s = await handles.get();
    await waitFor(async () => (await s.read(uniqueLock('probe')).then(() => true, () => false)), 30_000, 'the store to answer after the restart');
    return s;
  };

  describe(`${o.name}: fencing`, () => {
    after(() => handles.closeAll());

    it('the fencing token grows across releases and reopened handles', async () => {
      const lock = uniqueLock('fencing');
      const terms: number[] = [];
      for (let i = 0; i < 4; i++) {
        const s = await o.makeStore();
        try {
          const got = await acquire(s, lock, `h${i}`);
          terms.push(got.term);
          await release(s, lock, got.revision);
        } finally {
          await s.close();
        }
      }
      increasing(terms);
    });

    if (f.deleteRecord) {
      it('terms strictly increase after an operator deletes the record, held or released; a stale revision never matches', async () => {
        const lock = uniqueLock('deleted');
        const [a, b] = [await handles.get(), await handles.get()];
        const terms: number[] = [];
        // Deleted while released.
        const first = await acquire(a, lock, 'alice');
        terms.push(first.term);
        await release(a, lock, first.revision);
        await f.deleteRecord!(lock);
        assert.equal(await b.read(lock), null, 'the record is gone');
        const second = await acquire(b, lock, 'bob');
        terms.push(second.term);
        // Deleted while held.
        await f.deleteRecord!(lock);
        const third = await acquire(a, lock, 'carol');
        terms.push(third.term);
        increasing(terms);
        const stale = await b.write(lock, second.revision, keepWrite('bob'));
        assert.equal(stale.ok, false, 'the revision from before the deletion does not match the new record');
        // A handle that never saw the old records does not reuse their terms either.
        await f.deleteRecord!(lock);
        const fresh = await handles.get();
        const fourth = await acquire(fresh, lock, 'dave');
        terms.push(fourth.term);
        increasing(terms);
      });
    }

    if (f.restart) {
      it('terms strictly increase across a server restart, held or released', async () => {
        const [held, released] = [uniqueLock('restart-held'), uniqueLock('restart-free')];
        const s = await handles.get();
        const before = [await acquire(s, held, 'alice'), await acquire(s, released, 'alice')];
        await release(s, released, before[1]!.revision);
        await f.restart!();
        const t = await back();
        const free = await acquire(t, released, 'bob');
        increasing([before[1]!.term, free.term]);
        // The held lease either survived (same term) or vanished; a new acquisition is higher either way.
        const cur = await t.read(held);
        if (cur) {
          assert.equal(cur.term, before[0]!.term, 'a surviving record keeps its term');
          assert.ok((await t.write(held, cur.revision, keepWrite(null))).ok);
        }
        const again = await acquire(t, held, 'bob');
        increasing([before[0]!.term, again.term]);
      });
    }

    if (f.kill && f.start) {
      it('terms strictly increase across a kill and a later start', async () => {
        const lock = uniqueLock('killed');
        const s = await handles.get();
        const first = await acquire(s, lock, 'alice');
        await release(s, lock, first.revision);
        await f.kill!();
        try {
          await assert.rejects(s.read(lock), StoreUnavailableError, 'a read while the server is down fails');
        } finally {
          await f.start!();
        }
        const t = await back();
        const second = await acquire(t, lock, 'bob');
        increasing([first.term, second.term]);
      });
    }
  });
}
