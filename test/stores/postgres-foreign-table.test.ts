/**
 * A table of baton's name that is someone else's (other columns) is a configuration error that
 * names the table — exit 78, one line — never exit 70 with raw SQL, and baton creates nothing
 * beside it. Real PostgreSQL; the CLI from the build.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import pg from 'pg';
import { PostgresServer } from '../../infra/servers/index.js';
import { TempDir, cleanEnv, lines, runCli } from '../harness/cli.js';

const server = await new PostgresServer().start();
const dir = new TempDir();
after(async () => {
  await server.stop();
  dir.remove();
});

test('postgres: someone else\'s baton_leases table is a 78 naming it, for status and run alike', async () => {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    await client.query('CREATE SCHEMA theirs');
    await client.query('CREATE TABLE theirs.baton_leases (id serial PRIMARY KEY, name text)');
  } finally {
    await client.end();
  }
  const url = `${server.url}?schema=theirs`;
  const env = cleanEnv(dir.path);
  for (const args of [['status', '--store', url], ['is-leader', '--store', url, '--lock', 'job'], ['run', '--store', url, '--lock', 'job', '--', 'true']]) {
    const r = await runCli(args, { env });
    assert.equal(r.code, 78, `${args[0]}: ${r.stderr}`);
    assert.deepEqual(lines(r.stderr).length, 1, r.stderr);
    assert.match(r.stderr, /^baton: postgres: table "theirs\.baton_leases" in .*127\.0\.0\.1.* is not baton's \(it lacks lock, holder, .*\); name another with \?table=\n$/);
  }
  const check = new pg.Client({ connectionString: server.url });
  await check.connect();
  try {
    const { rows } = await check.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'theirs' ORDER BY 1`);
    assert.deepEqual(rows.map((r: { table_name: string }) => r.table_name), ['baton_leases'], 'nothing created beside their table');
  } finally {
    await check.end();
  }
});
