import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Ledger } from '../../core/store.js';
import { Handles, uniqueLock, type ConformanceOptions } from './context.js';

/** ledgerTests registers the durable ledger: create-if-absent, compare-and-set, prefix listing, survival across handles. */
export function ledgerTests(o: ConformanceOptions): void {
  describe(`${o.name}: ledger`, () => {
    const handles = new Handles(o.makeStore);
    let a: Ledger;
    let b: Ledger;
    before(async () => {
      a = (await handles.get()).ledger!;
      b = (await handles.get()).ledger!;
    });
    after(() => handles.closeAll());

    it('create-if-absent wins once; the loser gets the current entry or undefined', async () => {
      const key = `${uniqueLock('ledger')}/k`;
      assert.equal(await a.get(key), null);
      const results = await Promise.all([a.put(key, null, 'one'), b.put(key, null, 'two'), a.put(key, null, 'three')]);
      assert.equal(results.filter((r) => r.ok).length, 1);
      const winner = results.find((r) => r.ok)!;
      for (const r of results) if (!r.ok && r.current !== undefined) assert.equal(r.current?.value, winner.ok ? winner.entry.value : '');
      assert.equal((await b.get(key))?.value, winner.ok ? winner.entry.value : '');
    });

    it('compare-and-set on the version; a stale version loses', async () => {
      const key = `${uniqueLock('ledger')}/cas`;
      const first = await a.put(key, null, 'v1');
      assert.ok(first.ok);
      const second = await b.put(key, first.entry.version, 'v2');
      assert.ok(second.ok);
      assert.notEqual(second.entry.version, first.entry.version);
      const stale = await a.put(key, first.entry.version, 'v3');
      assert.equal(stale.ok, false);
      assert.equal((await a.get(key))?.value, 'v2');
    });

    it('values round-trip exactly, including JSON and unicode', async () => {
      const key = `${uniqueLock('ledger')}/json`;
      const value = JSON.stringify({ exitCode: 3, who: 'höst-1', at: '2026-11-21T00:00:00.000Z', nested: { ok: false } });
      assert.ok((await a.put(key, null, value)).ok);
      assert.equal((await b.get(key))?.value, value);
    });

    it('list returns entries under a prefix, in key order, honouring the limit', async () => {
      const prefix = `${uniqueLock('ledger')}/slots/`;
      for (const k of ['c', 'a', 'b']) assert.ok((await a.put(prefix + k, null, k)).ok);
      assert.ok((await a.put(`${prefix.slice(0, -1)}x`, null, 'outside')).ok);
      const all = await b.list(prefix);
      assert.deepEqual(all.map((e) => e.key), [`${prefix}a`, `${prefix}b`, `${prefix}c`]);
      assert.deepEqual((await b.list(prefix, 2)).map((e) => e.value), ['a', 'b']);
    });
  });
}
