/**
 * The PostgreSQL fencing guard against a real server (PostgresServer on a free loopback port):
 * a write with an older term is rejected and rolled back, a newer one accepted; concurrent
 * writers serialise on the fence row; the plain-SQL recipe works as documented.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { PostgresServer } from '../../infra/servers/index.js';
import { InvalidConfigError } from '../../src/core/errors.js';
import { exitCodeFor } from '../../src/cli/exit-codes.js';
import { StaleTermError, ensureFenceSchema, fencedQuery, isStaleTermError, withFence } from '../../src/jobs/fencing.js';

describe('PostgreSQL fencing guard', () => {
  const server = new PostgresServer();
  let pool: pg.Pool;
  before(async () => {
    await server.start();
    pool = new pg.Pool({ connectionString: server.url, max: 5 });
    // Every instance may install it at start-up, concurrently: idempotent and race-free.
    await Promise.all([ensureFenceSchema(pool), ensureFenceSchema(pool), ensureFenceSchema(pool)]);
    await pool.query('CREATE TABLE reports (id int PRIMARY KEY, body text NOT NULL, term bigint NOT NULL)');
  });
  after(async () => {
    await pool?.end();
    await server.stop();
  });

  const body = async (id: number) => (await pool.query('SELECT body, term FROM reports WHERE id = $1', [id])).rows[0];

  test('a newer term is accepted; an older one is rejected and its write rolled back', async () => {
    await fencedQuery(pool, { resource: 'nightly', term: 5 }, 'INSERT INTO reports VALUES (1, $1, 5)', ['from term 5']);
    await fencedQuery(pool, { resource: 'nightly', term: 7 }, 'UPDATE reports SET body = $1, term = 7 WHERE id = 1', ['from term 7']);
    await assert.rejects(
      fencedQuery(pool, { resource: 'nightly', term: 6 }, 'UPDATE reports SET body = $1, term = 6 WHERE id = 1', ['from stale term 6']),
      (e: Error) => e instanceof StaleTermError && e.term === 6 && exitCodeFor(e) === 75 && /term 6 is stale for "nightly" \(newest is 7\)/.test(e.message),
    );
    assert.deepEqual(await body(1), { body: 'from term 7', term: '7' });
    // The same term may write again (a leader writes many times per term).
    await fencedQuery(pool, { resource: 'nightly', term: 7 }, 'UPDATE reports SET body = $1 WHERE id = 1', ['term 7 again']);
    assert.equal((await body(1)).body, 'term 7 again');
    // Terms are per resource: another lock's low term is fine.
    await fencedQuery(pool, { resource: 'other-lock', term: 1 }, 'INSERT INTO reports VALUES (2, $1, 1)', ['other']);
    const fences = await pool.query('SELECT resource, term FROM baton_fences ORDER BY resource');
    assert.deepEqual(fences.rows, [{ resource: 'nightly', term: '7' }, { resource: 'other-lock', term: '1' }]);
  });

  test('with a single client: several statements commit together, or not at all', async () => {
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    try {
      await withFence(client, { resource: 'batch', term: 3 }, async (c) => {
        await c.query('INSERT INTO reports VALUES (10, $1, 3)', ['a']);
        await c.query('INSERT INTO reports VALUES (11, $1, 3)', ['b']);
      });
      await withFence(client, { resource: 'batch', term: 4 }, async () => {});
      await assert.rejects(
        withFence(client, { resource: 'batch', term: 3 }, async (c) => {
          await c.query('INSERT INTO reports VALUES (12, $1, 3)', ['c']);
        }),
        StaleTermError,
      );
      const ids = (await client.query('SELECT id FROM reports WHERE id >= 10 ORDER BY id')).rows.map((r) => r.id);
      assert.deepEqual(ids, [10, 11]);
      // The client is usable after a rejected transaction.
      assert.equal((await client.query('SELECT 1 AS one')).rows[0].one, 1);
    } finally {
      await client.end();
    }
  });

  test('concurrent writers: a stale leader that wakes up after the new leader committed is refused; one that committed first is ordered before', async () => {
    const stale = await pool.connect();
    const fresh = await pool.connect();
    try {
      // The old leader (term 8) starts its transaction and fences first …
      await stale.query('BEGIN');
      await stale.query('SELECT baton_fence($1, $2)', ['race', 8]);
      // … the new leader (term 9) blocks on the fence row until the old one ends.
      await fresh.query('BEGIN');
      let fencedFresh = false;
      const freshFence = fresh.query('SELECT baton_fence($1, $2)', ['race', 9]).then(() => (fencedFresh = true));
      await stale.query('INSERT INTO reports VALUES (20, $1, 8)', ['old leader, committed first']);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(fencedFresh, false, 'the newer term waits for the older transaction holding the fence row');
      await stale.query('COMMIT');
      await freshFence;
      await fresh.query('UPDATE reports SET body = $1, term = 9 WHERE id = 20', ['new leader']);
      await fresh.query('COMMIT');
      // Now the old leader tries again: too late.
      await stale.query('BEGIN');
      await assert.rejects(stale.query('SELECT baton_fence($1, $2)', ['race', 8]), (e: unknown) => isStaleTermError(e));
      await stale.query('ROLLBACK');
      assert.deepEqual(await body(20), { body: 'new leader', term: '9' });
    } finally {
      stale.release();
      fresh.release();
    }
  });

  test('the plain-SQL recipe, with the term as text as a shell gives it ($BATON_TERM)', async () => {
    const client = await pool.connect();
    try {
      const term = '12';
      await client.query('BEGIN');
      await client.query(`SELECT baton_fence('recipe', $1::bigint)`, [term]);
      await client.query(`INSERT INTO reports VALUES (30, 'recipe', $1::bigint)`, [term]);
      await client.query('COMMIT');
      await client.query('BEGIN');
      await assert.rejects(client.query(`SELECT baton_fence('recipe', 11)`), (e: { code?: string; message: string }) => e.code === 'BF001' && /stale/.test(e.message));
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
  });

  test('the psql recipe from docs/jobs.md: a current term commits, a stale one fails and writes nothing', async () => {
    const psql = ['/usr/lib/postgresql/15/bin/psql', '/usr/bin/psql'].find((p) => existsSync(p));
    assert.ok(psql, 'psql is installed with postgresql');
    await pool.query('CREATE TABLE daily (day date PRIMARY KEY, body text NOT NULL)');
    const recipe = (term: string, body: string) =>
      spawnSync(psql, [server.url, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-v', `term=${term}`], {
        input: `BEGIN;\nSELECT baton_fence('psql-recipe', :term);\nINSERT INTO daily (day, body) VALUES (current_date, '${body}')\n  ON CONFLICT (day) DO UPDATE SET body = excluded.body;\nCOMMIT;\n`,
        encoding: 'utf8',
      });
    const ok = recipe('4', 'term 4');
    assert.equal(ok.status, 0, ok.stderr);
    const stale = recipe('3', 'stale term 3');
    assert.notEqual(stale.status, 0);
    assert.match(stale.stderr, /baton_fence: term 3 is stale for "psql-recipe" \(newest is 4\)/);
    assert.equal((await pool.query('SELECT body FROM daily')).rows[0].body, 'term 4');
  });

  test('bad fences are config errors before any query', async () => {
    await assert.rejects(fencedQuery(pool, { resource: '', term: 1 }, 'SELECT 1'), InvalidConfigError);
    await assert.rejects(fencedQuery(pool, { resource: 'x', term: 0 }, 'SELECT 1'), InvalidConfigError);
    await assert.rejects(fencedQuery(pool, { resource: 'x', term: 1.5 }, 'SELECT 1'), InvalidConfigError);
  });
});
