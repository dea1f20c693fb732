// The renewal-only batch (renewRevisions) on MySQL/MariaDB, beyond the conformance suite: the
// statements it costs, a lost race in the middle of a statement, a deleted row, a lock named
// twice, and the text substitution of renewedAt (which must touch the record's own field only).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPool } from 'mysql2/promise';
import { MysqlStore } from '../../../src/stores/mysql/index.js';
import { MariaDBServer } from '../../../infra/servers/index.js';
import { acquireWrite, keepWrite, uniqueLock } from '../../../src/testing/index.js';
import type { LeaseRecord, LeaseStore, RevisionRenewal } from '../../../src/core/store.js';

const server = await new MariaDBServer().start();
after(() => server.stop());

/** statements reads the server's UPDATE (single- and multi-table) and SELECT counters (every client's statements). */
function statements(): { update: number; select: number } {
  const rows = server.sql("SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_update', 'Com_update_multi', 'Com_select')");
  const counts = new Map(rows.trim().split('\n').map((line) => line.split('\t') as [string, string]));
  const n = (name: string) => Number(counts.get(name));
  return { update: n('Com_update') + n('Com_update_multi'), select: n('Com_select') };
}

const renewalOf = (r: LeaseRecord, renewedAt: number, expected = r.revision): RevisionRenewal => ({ lock: r.lock, expected, renewedAt, leaseDurationMs: r.leaseDurationMs });

describe('mysql: renewal-only batch', () => {
  let a: LeaseStore;
  let b: LeaseStore;
  before(async () => {
    a = await MysqlStore.open({ url: server.url });
    b = await MysqlStore.open({ url: server.url });
  });
  after(async () => {
    await a.close();
    await b.close();
  });

  const holdMany = async (n: number, prefix: string): Promise<LeaseRecord[]> => {
    const records: LeaseRecord[] = [];
    for (let i = 0; i < n; i += 100) {
      const slice = Array.from({ length: Math.min(100, n - i) }, (_, k) => a.write(uniqueLock(`${prefix}${i + k}`), null, acquireWrite('alice', 7_000, 2)));
      for (const r of await Promise.all(slice)) {
        assert.ok(r.ok);
        records.push(r.record);
      }
    }
    return records;
  };

  it('renews 2,500 leases with three UPDATEs and no SELECT when every compare holds', async () => {
    const held = await holdMany(2_500, 'count');
    const renewedAt = Date.now() + 5_000;
    const before = statements();
    const revisions = await a.renewRevisions!(held.map((r) => renewalOf(r, renewedAt)));
    const spent = statements();
    assert.deepEqual({ update: spent.update - before.update, select: spent.select - before.select }, { update: 3, select: 0 });
    assert.ok(revisions.every((r, i) => typeof r === 'string' && r !== held[i]!.revision));
    for (const i of [0, 999, 1_000, 2_499]) assert.deepEqual(await b.read(held[i]!.lock), { ...held[i]!, renewedAt, revision: revisions[i] });
  });

  it('answers null for leases that moved or whose row was deleted in the middle of a statement, and renews the rest of it', async () => {
    const held = await holdMany(1_200, 'mid');
    const moved = await b.write(held[500]!.lock, held[500]!.revision, keepWrite('bob', 7_000, 3));
    assert.ok(moved.ok);
    server.sql(`DELETE FROM baton.baton_leases WHERE k = 'lease/${held[501]!.lock}'`);
    const taken = await b.write(held[1_100]!.lock, held[1_100]!.revision, { ...acquireWrite('carol', 7_000, 3), newTerm: true });
    assert.ok(taken.ok);
    const renewedAt = Date.now();
    const revisions = await a.renewRevisions!(held.map((r) => renewalOf(r, renewedAt)));
    const lost = revisions.flatMap((r, i) => (r === null ? [i] : []));
    assert.deepEqual(lost, [500, 501, 1_100]);
    assert.deepEqual(await b.read(held[500]!.lock), moved.record);
    assert.equal(await b.read(held[501]!.lock), null, 'a renewal must not bring a deleted row back');
    assert.deepEqual(await b.read(held[1_100]!.lock), taken.record);
    for (const i of [499, 502, 1_099, 1_101]) assert.equal((await b.read(held[i]!.lock))?.revision, revisions[i]);
    // The winners' new revisions are the compare now; a loser's old one still loses.
    assert.equal((await a.write(held[502]!.lock, revisions[502]!, keepWrite('alice', 7_000, 2))).ok, true);
    assert.equal((await a.write(held[500]!.lock, held[500]!.revision, keepWrite('alice', 7_000, 2))).ok, false);
  });

  it('two handles renewing the same leases at once, in opposite orders: each lease is renewed by one of them at most, and that one is told', async () => {
    const held = await holdMany(2_000, 'both');
    const renewedAt = Date.now();
    const items = held.map((r) => renewalOf(r, renewedAt));
    // Given in opposite orders; the store sends each batch in lock order, so the two take the rows'
    // locks in the same order and one waits for the other (in opposite orders InnoDB deadlocked
    // both, twice, in a CI run). Should a chunk still fail, it is an error (undefined answers
    // below), never a lost race reported as won.
    const [fromA, fromB] = await Promise.all([
      a.renewRevisions!(items).catch(() => items.map(() => undefined)),
      b.renewRevisions!([...items].reverse()).then((r) => r.reverse()).catch(() => items.map(() => undefined)),
    ]);
    let renewed = 0;
    for (const [i, r] of held.entries()) {
      const x = fromA[i];
      const y = fromB[i];
      assert.ok(!(typeof x === 'string' && typeof y === 'string'), `item ${i}: both handles were told they renewed it`);
      const won = typeof x === 'string' ? x : typeof y === 'string' ? y : undefined;
      const seen = (await a.read(r.lock))?.revision;
      if (won !== undefined) {
        renewed++;
        assert.equal(seen, won, `item ${i}: the revision a handle was given is the one stored`);
      } else if (x === null && y === null) assert.equal(seen, r.revision, `item ${i}: both told null, yet it changed`);
    }
    assert.ok(renewed > 0);
  });

  it('renews a lock named twice once, at whichever item names its current revision', async () => {
    const [r] = await holdMany(1, 'twice');
    const next = await b.write(r!.lock, r!.revision, keepWrite('alice', 7_000, 2));
    assert.ok(next.ok);
    const revisions = await a.renewRevisions!([renewalOf(r!, Date.now()), renewalOf(next.record, Date.now())]);
    assert.equal(revisions[0], null);
    assert.equal(typeof revisions[1], 'string');
    assert.equal((await b.read(r!.lock))?.revision, revisions[1]);
  });

  it('changes only the record\'s own renewedAt: not a "renewedAt" in the metadata or the holder, and the term is kept', async () => {
    const lock = uniqueLock(`quote'and\\backslash`);
    const holder = 'h,"renewedAt":1,"x';
    // metadataJson keeps key order: the metadata's own `,"renewedAt":` comes after the record's.
    const metadata = { note: ',"renewedAt":7,', renewedAt: 42 };
    const first = await a.write(lock, null, { ...acquireWrite(holder, 7_000, 1), metadata });
    assert.ok(first.ok);
    const renewedAt = Date.now() + 777;
    const [revision] = await a.renewRevisions!([renewalOf(first.record, renewedAt)]);
    assert.equal(typeof revision, 'string');
    const seen = await b.read(lock);
    assert.deepEqual(seen, { ...first.record, renewedAt, revision });
    assert.deepEqual(seen?.metadata, metadata);
    // The handle remembered the term across the renewal: a release needs no read (one UPDATE).
    const before = statements();
    const released = await a.write(lock, revision!, keepWrite(null));
    const spent = statements();
    assert.ok(released.ok);
    assert.equal(released.record.term, first.record.term);
    assert.deepEqual({ update: spent.update - before.update, select: spent.select - before.select }, { update: 1, select: 0 });
  });

  it('renews through an application pool with namedPlaceholders, a lock name holding ":name" included', async () => {
    const pool = createPool({ uri: server.url, connectionLimit: 2, namedPlaceholders: true });
    const store = await MysqlStore.open({ pool });
    try {
      const lock = uniqueLock('shard:alpha');
      const first = await store.write(lock, null, acquireWrite('alice', 7_000, 1));
      assert.ok(first.ok);
      const renewedAt = Date.now() + 99;
      const [revision] = await store.renewRevisions!([renewalOf(first.record, renewedAt)]);
      assert.equal(typeof revision, 'string');
      assert.deepEqual(await b.read(lock), { ...first.record, renewedAt, revision });
    } finally {
      await store.close();
      await pool.end();
    }
  });
});
