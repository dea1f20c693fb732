import assert from 'node:assert/strict';
import type { Ledger } from '../../core/store.js';
import { Handles, uniqueLock, type ConformanceOptions, runnerOf } from './context.js';

/**
 * ledgerTests registers the durable ledger: create-if-absent, compare-and-set, prefix listing,
 * survival across handles, and (a store whose ledger has `remove`) compare-and-delete.
 */
export function ledgerTests(o: ConformanceOptions, caps: { readonly ledgerRemove?: boolean } = {}): void {
  const { describe, it, before, after } = runnerOf(o);
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

    const noRemove = caps.ledgerRemove ? false : 'the ledger has no remove';
    it('remove deletes only at the current version; the key made again shares no version with its first life', { skip: noRemove }, async () => {
      const prefix = `${uniqueLock('ledger')}/rm/`;
      const key = `${prefix}k`;
      const v1 = await a.put(key, null, 'one');
      assert.ok(v1.ok);
      const v2 = await a.put(key, v1.entry.version, 'two');
      assert.ok(v2.ok);
      assert.equal(await b.remove!(key, v1.entry.version), false, 'a stale version removes nothing');
      assert.equal((await a.get(key))?.value, 'two');
      assert.equal(await b.remove!(key, v2.entry.version), true);
      assert.equal(await a.get(key), null);
      assert.deepEqual(await a.list(prefix), []);
      assert.equal(await b.remove!(key, v2.entry.version), false, 'an absent key removes nothing');
      // Its second life, taken as far as the first went: no version of the first life acts on it.
      const n1 = await b.put(key, null, 'again');
      assert.ok(n1.ok, 'a removed key can be made again');
      const n2 = await b.put(key, n1.entry.version, 'again-2');
      assert.ok(n2.ok);
      for (const old of [v1.entry.version, v2.entry.version]) {
        assert.equal((await a.put(key, old, 'stale')).ok, false, `version ${old} of the first life writes nothing`);
        assert.equal(await a.remove!(key, old), false, `version ${old} of the first life removes nothing`);
      }
      assert.equal((await b.get(key))?.value, 'again-2');
    });

    it('two removes at one version: exactly one removes', { skip: noRemove }, async () => {
      const key = `${uniqueLock('ledger')}/rm-race`;
      const made = await a.put(key, null, 'x');
      assert.ok(made.ok);
      const results = await Promise.all([a.remove!(key, made.entry.version), b.remove!(key, made.entry.version)]);
      assert.deepEqual(results.filter(Boolean).length, 1);
      assert.equal(await b.get(key), null);
    });
  });
}
