/**
 * PostgreSQL store specifics, against a real PostgreSQL 15: URL options, the schema it creates,
 * fencing after a lease row is deleted, renewMany as one round trip, notification payloads and
 * re-LISTEN after the session is cut, an application's Pool or Client, and error translation.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { InvalidConfigError, StoreClosedError, StoreUnavailableError } from '../../../src/core/errors.js';
import { openStore, parseStoreUrl } from '../../../src/stores/registry.js';
import type { LeaseRecord, LeaseWrite } from '../../../src/core/store.js';
import { parsePostgresUrl } from '../../../src/stores/postgres/config.js';
import { describePgError } from '../../../src/stores/postgres/errors.js';
import { PostgresStore } from '../../../src/stores/postgres/index.js';
import { LeaderElector } from '../../../src/core/elector.js';
import { PostgresServer, freePort } from '../../../infra/servers/index.js';

const server = await new PostgresServer().start();
const admin = new pg.Client({ connectionString: server.url });
admin.on('error', () => {});
await admin.connect();
after(async () => {
  await admin.end().catch(() => {});
  await server.stop();
});

const stores: PostgresStore[] = [];
const store = (extra: string | object = '') => {
  const s =
    typeof extra === 'string' ? new PostgresStore({ connectionString: server.url + extra }) : new PostgresStore(extra as ConstructorParameters<typeof PostgresStore>[0]);
  stores.push(s);
  return s;
};
after(() => Promise.all(stores.map((s) => s.close())));

let n = 0;
const lockName = (what: string) => `pg-${what}-${process.pid}-${n++}`;
const acquire = (holder: string, metadata: Record<string, unknown> = {}): LeaseWrite => ({
  holder,
  newTerm: true,
  leaseDurationMs: 5000,
  acquiredAt: Date.now(),
  renewedAt: Date.now(),
  transitions: 1,
  stepDownRequested: false,
  metadata,
});
const keep = (holder: string | null): LeaseWrite => ({ ...acquire(holder ?? 'x'), holder, newTerm: false });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms}ms waiting for ${what}`);
    await sleep(10);
  }
}

describe('postgres: URL options', () => {
  it('defaults, and baton options are taken out of the connection string', () => {
    const p = parsePostgresUrl('postgres://u:secret@db.example:6543/app?table=my_leases&schema=coord&sslmode=disable&connect_timeout=3');
    assert.equal(p.tuning.table, 'my_leases');
    assert.equal(p.tuning.schema, 'coord');
    assert.equal(p.tuning.connectTimeoutMs, 3000, 'a bare connect_timeout is seconds, as in libpq');
    assert.equal(p.tuning.statementTimeoutMs, 5000);
    assert.equal(p.tuning.queryTimeoutMs, 6000);
    assert.equal(p.tuning.listen, true);
    assert.equal(p.connectionString, 'postgres://u:secret@db.example:6543/app?sslmode=disable');
    const t = parsePostgresUrl('postgresql://h/db?statement_timeout=2s&query_timeout=2500ms&pool_max=2&listen=false&heartbeat=1s').tuning;
    assert.deepEqual([t.statementTimeoutMs, t.queryTimeoutMs, t.poolMax, t.listen, t.heartbeatMs], [2000, 2500, 2, false, 1000]);
    assert.equal(parsePostgresUrl('postgres://h/db?statement_timeout=10000').tuning.queryTimeoutMs, 11_000, 'query timeout follows the statement timeout');
    const s = new PostgresStore({ connectionString: 'postgres://h/db?table=from_url&pool_max=7', table: 'from_code' });
    assert.deepEqual([s.tuning.table, s.tuning.poolMax], ['from_code', 7], 'options given in code win over the URL');
    void s.close();
  });

  it('rejects bad values with one line naming the option', () => {
    const bad: [string, RegExp][] = [
      ['?table=Leases', /table "Leases" must be 1–48 characters/],
      ['?table=x;drop', /table "x;drop"/],
      ['?schema=1abc', /schema "1abc"/],
      ['?tabel=x', /unknown URL option "tabel"/],
      ['?pool_max=0', /pool_max="0"/],
      ['?connect_timeout=soon', /connect_timeout/],
      ['?statement_timeout=5s&query_timeout=1s', /query_timeout \(1000ms\) must not be shorter than statement_timeout/],
      ['?listen=maybe', /listen="maybe" must be true or false/],
    ];
    for (const [query, message] of bad) {
      assert.throws(() => new PostgresStore({ connectionString: `postgres://h/db${query}` }), (err: unknown) => {
        assert.ok(err instanceof InvalidConfigError, `${query}: ${String(err)}`);
        assert.match(err.message, message);
        assert.equal(err.message.includes('\n'), false);
        return true;
      });
    }
    assert.throws(() => new PostgresStore({}), /exactly one of connectionString, pool or client/);
  });

  it('both schemes open this store through openStore', async () => {
    assert.equal(parseStoreUrl(`postgresql://127.0.0.1:${server.port}/postgres`).scheme, 'postgresql');
    for (const scheme of ['postgres', 'postgresql']) {
      const s = await openStore(`${scheme}://postgres@127.0.0.1:${server.port}/postgres?table=opened_${scheme}`);
      try {
        assert.equal(s.kind, 'postgres');
        assert.deepEqual({ ...s.capabilities }, { serverExpiry: false });
        assert.equal(await s.read('nothing-here'), null);
      } finally {
        await s.close();
      }
    }
    await assert.rejects(openStore(`postgres://127.0.0.1:${server.port}/postgres?table=NO`), InvalidConfigError);
  });
});

describe('postgres: schema and fencing', () => {
  it('creates the documented tables in the named schema, once, even when many stores start together', async () => {
    const many = Array.from({ length: 6 }, () => store('?schema=baton_test&table=race_leases'));
    await Promise.all(many.map((s, i) => s.write(`lock-${i}`, null, acquire(`h${i}`))));
    const { rows } = await admin.query(
      `SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
       WHERE ns.nspname = 'baton_test' AND c.relkind IN ('r', 'S') ORDER BY c.relname`,
    );
    assert.deepEqual(rows.map((r) => `${r.relname}:${r.relkind}`), ['race_leases:r', 'race_leases_ledger:r', 'race_leases_revision:S', 'race_leases_terms:r']);
    assert.equal((await many[0]!.list()).length, 6);
  });

  it('a renewal keeps the term; only acquisitions advance the counter, by one', async () => {
    const s = store();
    const lock = lockName('counter');
    const a = await s.write(lock, null, acquire('alice'));
    assert.ok(a.ok);
    const r = await s.write(lock, a.record.revision, keep('alice'));
    assert.ok(r.ok);
    const released = await s.write(lock, r.record.revision, keep(null));
    assert.ok(released.ok);
    const b = await s.write(lock, released.record.revision, acquire('bob'));
    assert.ok(b.ok);
    assert.deepEqual([a.record.term, r.record.term, released.record.term, b.record.term], [1, 1, 1, 2]);
    const { rows } = await admin.query('SELECT term FROM baton_leases_terms WHERE lock = $1', [lock]);
    assert.equal(Number(rows[0].term), 2);
  });

  it('tables dropped behind its back are created again on the next call', async () => {
    const s = store('?table=dropped_leases');
    const lock = lockName('dropped');
    assert.ok((await s.write(lock, null, acquire('alice'))).ok);
    await admin.query('DROP TABLE dropped_leases');
    assert.equal(await s.read(lock), null);
    const again = await s.write(lock, null, acquire('bob'));
    assert.ok(again.ok);
    assert.ok(again.record.term > 1, 'the surviving counter table still fences');
  });
});

describe('postgres: permissions', () => {
  it('a role with only the documented grants uses tables a DBA created; without them it gets StoreUnavailableError', async () => {
    const owner = store('?schema=perm&table=perm_leases');
    await owner.read('create-the-tables');
    await admin.query(`DROP ROLE IF EXISTS baton_app`);
    await admin.query(`CREATE ROLE baton_app LOGIN`);
    await admin.query(`GRANT USAGE ON SCHEMA perm TO baton_app`);
    await admin.query(`GRANT SELECT, INSERT, UPDATE ON perm.perm_leases, perm.perm_leases_terms, perm.perm_leases_ledger TO baton_app`);
    await admin.query(`GRANT USAGE ON SEQUENCE perm.perm_leases_revision TO baton_app`);
    const url = `postgres://baton_app@127.0.0.1:${server.port}/postgres`;
    const app = store({ connectionString: `${url}?schema=perm&table=perm_leases` });
    const lock = lockName('perm');
    const seen: unknown[] = [];
    const off = app.watch!(lock, (r) => seen.push(r));
    try {
      await until('LISTEN in place', () => app.listening);
      const w = await app.write(lock, null, acquire('alice'));
      assert.ok(w.ok);
      const renewed = await app.renewMany!([{ lock, expected: w.record.revision, next: keep('alice') }]);
      assert.ok(renewed[0]!.ok);
      assert.ok((await app.ledger!.put(`${lock}/k`, null, 'v')).ok);
      assert.equal((await app.list!()).length >= 1, true);
      await until('notifications', () => seen.length >= 2);
    } finally {
      off();
    }
    const denied = store({ connectionString: `${url}?schema=perm&table=other_perm_leases` });
    await assert.rejects(denied.read('x'), (err: unknown) => err instanceof StoreUnavailableError && /permission denied.*42501/.test(err.message));
  });
});

describe('postgres: batch renewal', () => {
  it('renewMany renews N leases in one round trip and reports each failure with the current row', async () => {
    const pool = new pg.Pool({ connectionString: server.url, max: 2 });
    let queries = 0;
    const query = pool.query.bind(pool);
    (pool as unknown as { query: unknown }).query = (...args: unknown[]) => {
      queries++;
      return (query as (...a: unknown[]) => unknown)(...args);
    };
    const s = store({ pool, listen: false });
    try {
      const locks = Array.from({ length: 30 }, () => lockName('batch'));
      const held = await Promise.all(locks.map((l) => s.write(l, null, acquire('alice'))));
      const taken = await s.write(locks[3]!, (held[3] as { record: LeaseRecord }).record.revision, acquire('bob'));
      assert.ok(taken.ok);
      queries = 0;
      const results = await s.renewMany!(held.map((r, i) => ({ lock: locks[i]!, expected: (r as { record: LeaseRecord }).record.revision, next: keep('alice') })));
      assert.equal(queries, 1, 'one statement for the whole batch');
      results.forEach((r, i) => assert.equal(r.ok, i !== 3, `item ${i}`));
      const lost = results[3]!;
      assert.ok(!lost.ok && lost.current?.holder === 'bob', 'the lost item carries the current row');
    } finally {
      await s.close();
      await pool.end();
    }
  });
});

describe('postgres: statement order', () => {
  // A shard group member puts dozens of reads and releases on its pool at once; the statement that
  // renews every lease it holds must not wait behind them (src/stores/postgres/priority-queue.ts).
  it('with every connection busy, a renewal waiting behind reads and a release runs before them', async () => {
    const s = store('?pool_max=1');
    const [blocker, renewed, ...readLocks] = [lockName('blocker'), lockName('renewed'), lockName('r1'), lockName('r2'), lockName('r3')];
    const held = await s.write(renewed!, null, acquire('alice'));
    const blocked = await s.write(blocker!, null, acquire('alice'));
    assert.ok(held.ok && blocked.ok);
    // The store's one connection waits on a row lock an admin transaction holds.
    await admin.query('BEGIN');
    await admin.query(`SELECT 1 FROM baton_leases WHERE lock = $1 FOR UPDATE`, [blocker]);
    const order: string[] = [];
    const stuck = s.write(blocker!, blocked.record.revision, keep(null)).then(() => order.push('stuck release'));
    await until('the store to wait on the row lock', async () => {
      const { rows } = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%baton_leases%'`);
      return rows[0].n > 0;
    });
    const reads = readLocks.map((l) => s.read(l).then(() => order.push('read')));
    const release = s.write(readLocks[0]!, '1', keep(null)).then(() => order.push('release'));
    const renewal = s.renewMany!([{ lock: renewed!, expected: held.record.revision, next: keep('alice') }]).then((r) => {
      order.push('renewal');
      return r;
    });
    await admin.query('COMMIT');
    const [result] = await renewal;
    await Promise.all([stuck, release, ...reads]);
    assert.equal(result!.ok, true);
    assert.deepEqual(order, ['stuck release', 'renewal', 'read', 'read', 'read', 'release']);
  });
});

describe('postgres: notification', () => {
  it('each write NOTIFYs its record on the table\'s channel; other tables are not heard', async () => {
    const writer = store();
    const watcher = store();
    const otherTable = store('?table=other_leases');
    const lock = lockName('notify');
    const seen: (LeaseRecord | null | undefined)[] = [];
    const off = watcher.watch!(lock, (r) => seen.push(r));
    try {
      await until('LISTEN in place', () => watcher.listening);
      assert.ok((await otherTable.write(lock, null, acquire('elsewhere'))).ok);
      const w = await writer.write(lock, null, acquire('alice', { hostname: 'h1' }));
      assert.ok(w.ok);
      await until('the acquisition', () => seen.length > 0);
      assert.deepEqual(seen, [w.record], 'the payload is the whole record, equal to what the writer got');
    } finally {
      off();
    }
  });

  it('renewRevisions is one statement and still NOTIFYs each renewed record, whole, to other handles', async () => {
    const pool = new pg.Pool({ connectionString: server.url, max: 2 });
    let queries = 0;
    const query = pool.query.bind(pool);
    (pool as unknown as { query: unknown }).query = (...args: unknown[]) => {
      queries++;
      return (query as (...a: unknown[]) => unknown)(...args);
    };
    const writer = store({ pool, listen: false });
    const watcher = store();
    const locks = [lockName('rr-notify'), lockName('rr-notify')];
    const seen = new Map<string, LeaseRecord[]>();
    const offs = locks.map((l) => watcher.watch!(l, (r) => r && seen.set(l, [...(seen.get(l) ?? []), r])));
    try {
      await until('LISTEN in place', () => watcher.listening);
      const held = await Promise.all(locks.map((l) => writer.write(l, null, acquire('alice', { hostname: 'h1' }))));
      await until('both acquisitions', () => locks.every((l) => seen.get(l)?.length === 1));
      queries = 0;
      const records = held.map((h) => (h as { record: LeaseRecord }).record);
      const renewedAt = Date.now() + 1000;
      const revisions = await writer.renewRevisions!(records.map((r) => ({ lock: r.lock, expected: r.revision, renewedAt, leaseDurationMs: r.leaseDurationMs })));
      assert.equal(queries, 1, 'one statement for the whole batch');
      await until('both renewals heard', () => locks.every((l) => seen.get(l)?.length === 2));
      records.forEach((r, i) => {
        assert.equal(typeof revisions[i], 'string');
        assert.deepEqual(seen.get(r.lock)![1], { ...r, renewedAt, revision: revisions[i] }, 'the payload is the whole renewed record');
      });
    } finally {
      offs.forEach((off) => off());
      await writer.close();
      await pool.end();
    }
  });

  it('a handle hears its own renewals without parsing them, and every other change of its leases whole', async () => {
    const own = store();
    const other = store();
    for (const holder of ['alice', 'al"i\\ce, "renewed_at" : 1, "transitions" : 2']) {
      const lock = lockName('own');
      const seen: LeaseRecord[] = [];
      const off = own.watch!(lock, (r) => r && seen.push(r));
      try {
        await until('LISTEN in place', () => own.listening);
        const w = await own.write(lock, null, acquire(holder, { hostname: 'h1' }));
        assert.ok(w.ok);
        await until('the acquisition', () => seen.length === 1);
        let cur = w.record;
        for (let i = 1; i <= 3; i++) {
          const renewedAt = Date.now() + i;
          const [revision] = await own.renewRevisions!([{ lock, expected: cur.revision, renewedAt, leaseDurationMs: cur.leaseDurationMs }]);
          assert.ok(revision);
          cur = { ...cur, renewedAt, revision };
          await until(`renewal ${i}`, () => seen.length === 1 + i);
          assert.deepEqual(seen[i], cur);
        }
        // The decoder took the second and third renewals as renewals of the record before (its metadata object is reused).
        assert.equal(seen[3]!.metadata, seen[2]!.metadata);
        // Every other write, whatever it keeps of the record, is heard as it was written.
        const writes: LeaseWrite[] = [
          { ...keep(holder), metadata: { hostname: 'h2' } },
          { ...keep(holder), metadata: { hostname: 'h2' }, transitions: 5 },
          { ...keep(holder), metadata: { hostname: 'h2' }, transitions: 5, stepDownRequested: true },
          { ...acquire('bob', { hostname: 'h2' }) },
        ];
        for (const next of writes) {
          const r = await other.write(lock, cur.revision, next);
          assert.ok(r.ok);
          cur = r.record;
          await until(`the write by ${next.holder}`, () => seen.at(-1)?.revision === cur.revision);
          assert.deepEqual(seen.at(-1), cur);
        }
      } finally {
        off();
      }
    }
  });

  it('a record too big for a NOTIFY payload is announced without it; the watcher reads', async () => {
    const writer = store();
    const watcher = store();
    const lock = lockName('big');
    const seen: (LeaseRecord | null | undefined)[] = [];
    const off = watcher.watch!(lock, (r) => seen.push(r));
    try {
      await until('LISTEN in place', () => watcher.listening);
      const w = await writer.write(lock, null, acquire('alice', { blob: 'x'.repeat(10_000) }));
      assert.ok(w.ok, 'the write succeeds although its record exceeds 8000 bytes');
      await until('the announcement', () => seen.length > 0);
      assert.deepEqual(seen, [undefined]);
      assert.equal((await watcher.read(lock))?.metadata.blob, 'x'.repeat(10_000));
    } finally {
      off();
    }
  });

  it('listen=false: no watch member and no LISTEN session', async () => {
    const s = store('?listen=false');
    assert.equal(s.watch, undefined, 'no watch without LISTEN: electors poll');
    await s.read('x');
    assert.equal(s.listening, false);
  });
});

describe('postgres: application-owned connections', () => {
  let pool: pg.Pool;
  before(() => {
    pool = new pg.Pool({ connectionString: server.url, max: 3 });
  });
  after(() => pool.end());

  it('uses an application Pool, guards it against idle errors, and leaves it open on close', async () => {
    const before = pool.listenerCount('error');
    const s = new PostgresStore({ pool });
    assert.equal(pool.listenerCount('error'), before + 1, 'an error listener is attached');
    const lock = lockName('app-pool');
    const w = await s.write(lock, null, acquire('alice'));
    assert.ok(w.ok);
    const seen: unknown[] = [];
    const off = s.watch!(lock, (r) => seen.push(r));
    await until('LISTEN in place', () => s.listening);
    off();
    await s.close();
    assert.equal(pool.listenerCount('error'), before);
    assert.equal((await pool.query('SELECT 1 AS one')).rows[0].one, 1, 'the pool is still usable');
    await assert.rejects(s.read(lock), StoreClosedError);
  });

  it('uses an application Client for queries and LISTEN, and does not end it', async () => {
    const client = new pg.Client({ connectionString: server.url });
    client.on('error', () => {});
    await client.connect();
    try {
      const s = new PostgresStore({ client });
      const writer = store();
      const lock = lockName('app-client');
      const seen: (LeaseRecord | null | undefined)[] = [];
      const off = s.watch!(lock, (r) => seen.push(r));
      await until('LISTEN in place', () => s.listening);
      const w = await writer.write(lock, null, acquire('alice'));
      assert.ok(w.ok);
      await until('the notification', () => seen.length > 0);
      assert.equal((await s.read(lock))?.term, w.record.term);
      off();
      await s.close();
      assert.equal((await client.query('SELECT 2 AS two')).rows[0].two, 2);
    } finally {
      await client.end();
    }
  });
});

describe('postgres: failures are StoreUnavailableError', () => {
  it('nothing listening: one line naming host and port, never the password', async () => {
    const port = await freePort();
    const s = store({ connectionString: `postgres://baton:hunter2@127.0.0.1:${port}/app?connect_timeout=2` });
    await assert.rejects(s.read('x'), (err: unknown) => {
      assert.ok(err instanceof StoreUnavailableError, String(err));
      assert.match(err.message, new RegExp(`^postgres: 127\\.0\\.0\\.1:${port}/app: .*ECONNREFUSED`));
      assert.equal(err.message.includes('hunter2'), false);
      assert.equal(err.message.includes('\n'), false);
      return true;
    });
    await assert.rejects(s.write('x', null, acquire('a')), StoreUnavailableError);
    await assert.rejects(s.ledger!.get('x'), StoreUnavailableError);
  });

  it('error descriptions: empty dual-stack AggregateErrors, SQLSTATEs and the pooler hint', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' });
    const refused4 = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    assert.equal(describePgError(new AggregateError([refused, refused4], '')), 'connect ECONNREFUSED ::1:5432; connect ECONNREFUSED 127.0.0.1:5432');
    // The message PgBouncer sends for a startup parameter it does not pass on.
    const bouncer = Object.assign(new Error('unsupported startup parameter: statement_timeout'), { code: '08P01' });
    assert.equal(describePgError(bouncer), 'unsupported startup parameter: statement_timeout — behind a pooler, add statement_timeout=0 to the store URL (SQLSTATE 08P01)');
  });

  it('a server-side statement timeout becomes StoreUnavailableError, and the store carries on', async () => {
    const s = store('?statement_timeout=300ms');
    const lock = lockName('timeout');
    const w = await s.write(lock, null, acquire('alice'));
    assert.ok(w.ok);
    const holder = new pg.Client({ connectionString: server.url });
    holder.on('error', () => {});
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT * FROM baton_leases WHERE lock = $1 FOR UPDATE', [lock]);
      await assert.rejects(s.write(lock, w.record.revision, keep('alice')), (err: unknown) => {
        assert.ok(err instanceof StoreUnavailableError);
        assert.match(err.message, /statement timeout.*57014/);
        return true;
      });
      await holder.query('ROLLBACK');
      assert.ok((await s.write(lock, w.record.revision, keep('alice'))).ok);
    } finally {
      await holder.end();
    }
  });
});
