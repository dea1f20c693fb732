/**
 * What is particular to the MySQL/MariaDB store's SQL, against a private MariaDB 10.11: a batch
 * renewal in which some rows lost, versions never repeating after a row is deleted, the table
 * created once and idempotently, an unreachable server and a wrong password. (Server kills,
 * freezes and connection cuts are the public suite's fault scenarios: conformance.test.ts.)
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { StoreUnavailableError } from '../../../src/core/errors.js';
import { exitCodeFor } from '../../../src/cli/exit-codes.js';
import mysql from 'mysql2/promise';
import { MysqlStore } from '../../../src/stores/mysql/index.js';
import { galeraSyncWait } from '../../../src/stores/mysql/galera.js';
import { MysqlStatements } from '../../../src/stores/mysql/sql.js';
import { acquireWrite, keepWrite, uniqueLock } from '../../../src/testing/conformance/context.js';
import { MariaDBServer, freePort } from '../../../infra/servers/index.js';

const server = await new MariaDBServer().start();
after(() => server.stop());

describe('mysql SQL', () => {
  it('a batch renewal is one UPDATE; rows that lost their race fail alone', async () => {
    const a = await MysqlStore.open({ url: server.url });
    const b = await MysqlStore.open({ url: server.url });
    try {
      const locks = [uniqueLock('batch'), uniqueLock('batch'), uniqueLock('batch')];
      const held = await Promise.all(locks.map(async (l) => {
        const r = await a.write(l, null, acquireWrite('a'));
        assert.ok(r.ok);
        return r.record;
      }));
      // Someone else writes the middle lock: its renewal in the batch must fail, the others succeed.
      const stolen = await b.write(locks[1]!, held[1]!.revision, acquireWrite('b'));
      assert.ok(stolen.ok);
      const before = Number(server.sql("SHOW GLOBAL STATUS LIKE 'Com_update'").split('\t')[1]);
      const results = await a.renewMany!(held.map((r) => ({ lock: r.lock, expected: r.revision, next: keepWrite('a') })));
      const after = Number(server.sql("SHOW GLOBAL STATUS LIKE 'Com_update'").split('\t')[1]);
      assert.deepEqual(results.map((r) => r.ok), [true, false, true]);
      assert.equal(after - before, 1, 'one UPDATE statement for the batch');
      for (const [i, r] of results.entries()) if (r.ok) assert.equal(r.record.term, held[i]!.term, 'a renewal keeps the term');
      assert.equal((await a.read(locks[1]!))?.holder, 'b');
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('versions never repeat for a lock, even after its row is deleted and made again', async () => {
    const store = await MysqlStore.open({ url: server.url });
    try {
      const lock = uniqueLock('version');
      const first = await store.write(lock, null, acquireWrite('a'));
      assert.ok(first.ok);
      await store.deleteRecord(lock);
      const second = await store.write(lock, null, acquireWrite('b'));
      assert.ok(second.ok);
      assert.notEqual(second.record.revision, first.record.revision);
      assert.ok(second.record.term > first.record.term, 'the term counter row survived the delete');
      // The first holder's stale revision does not match the new row.
      assert.equal((await store.write(lock, first.record.revision, keepWrite('a'))).ok, false);
    } finally {
      await store.close();
    }
  });

  it('the table is created on first use, once; ?table= names another', async () => {
    const s1 = await MysqlStore.open({ url: `${server.url}?table=other_leases` });
    const s2 = await MysqlStore.open({ url: `${server.url}?table=other_leases` });
    await s1.close();
    await s2.close();
    const tables = server.sql("SELECT table_name FROM information_schema.tables WHERE table_schema = 'baton' AND table_name = 'other_leases'");
    assert.equal(tables.trim(), 'other_leases');
    const columns = server.sql("SELECT column_name FROM information_schema.columns WHERE table_schema = 'baton' AND table_name = 'other_leases' ORDER BY ordinal_position");
    assert.deepEqual(columns.trim().split('\n'), ['k', 'v', 'version']);
  });

  it('an unreachable server is StoreUnavailableError (exit 69) with one line', async () => {
    const port = await freePort();
    await assert.rejects(MysqlStore.open({ url: `mysql://baton:baton@127.0.0.1:${port}/baton?timeout=500ms` }), (e: Error) => {
      return e instanceof StoreUnavailableError && exitCodeFor(e) === 69 && !e.message.includes('\n') && e.message.startsWith('mysql:');
    });
  });

  it('without wsrep (a lone MariaDB) the statements carry no Galera causality wait', async () => {
    const pool = mysql.createPool({ uri: server.url, connectionLimit: 1 });
    try {
      assert.equal(await galeraSyncWait(pool, 2_000), 0);
      assert.ok(!new MysqlStatements('t', 0).get.includes('wsrep'));
    } finally {
      await pool.end();
    }
  });

  it('a wrong password is StoreUnavailableError naming the server, never the password', async () => {
    await assert.rejects(MysqlStore.open({ url: `mysql://baton:wrong-secret@127.0.0.1:${server.port}/baton` }), (e: Error) => {
      return e instanceof StoreUnavailableError && /127\.0\.0\.1/.test(e.message) && /denied/i.test(e.message) && !e.message.includes('wrong-secret');
    });
  });
});
