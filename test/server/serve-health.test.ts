/**
 * /readyz and /healthz of a real `baton serve` when its SQLite store stops taking writes: the
 * test holds `BEGIN EXCLUSIVE` on the database file (a real lock another process holds, as a
 * stuck writer would), longer than the renew deadline.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { openDatabase, type SqlDatabase } from '../../src/stores/sqlite/driver.js';
import { SqliteStore } from '../../src/stores/sqlite/index.js';
import { BatonProcess, TempDir, cleanEnv, waitFor } from '../harness/cli.js';
import { SERVE_TIMING, getJson, logLines, metric, scrape, startServe } from './serve-harness.js';


const dir = new TempDir();
const started: BatonProcess[] = [];
const held: SqlDatabase[] = [];
after(async () => {
  for (const db of held) db.close();
  await Promise.all(started.map((b) => b.kill()));
  dir.remove();
});

/** lockDatabase opens its own connection and takes the write lock until `release`. */
function lockDatabase(path: string): { release(): void } {
  const db = openDatabase(path, 5_000);
  held.push(db);
  db.exec('BEGIN EXCLUSIVE');
  return {
    release() {
      db.exec('ROLLBACK');
      db.close();
      held.splice(held.indexOf(db), 1);
    },
  };
}

test('/readyz is 503 until the elector reaches the store, then 200', async () => {
  const path = dir.join('ready.db');
  await new SqliteStore(path).close(); // create the schema, so only the lease write is blocked
  const lock = lockDatabase(path);
  const s = await startServe(['--store', `sqlite:${path}`, '--lock', 'ready', ...SERVE_TIMING], cleanEnv(dir.path), started);
  try {
    // The first acquisition cannot be written while the test holds the lock.
    const r = await getJson(`${s.url}/readyz`);
    assert.equal(r.status, 503);
    assert.equal(r.body.status, 'not ready');
    assert.equal((await getJson(`${s.url}/leader`)).body.ready, false);
    await waitFor('a store error to be reported', () => logLines(s.proc.stderr).some((l) => l.event === 'store-error'), 10_000, 50);
    assert.equal((await getJson(`${s.url}/readyz`)).status, 503);
  } finally {
    lock.release();
  }
  await waitFor('ready', async () => (await getJson(`${s.url}/readyz`)).status === 200, 10_000, 50);
  assert.equal((await getJson(`${s.url}/leader`)).body.isSelf, true);
});

test('/healthz turns 503 when the leader cannot renew past its deadline, and 200 once it can', async () => {
  const path = dir.join('health.db');
  const s = await startServe(['--store', `sqlite:${path}`, '--lock', 'health', ...SERVE_TIMING], cleanEnv(dir.path), started);
  const led = await waitFor('to lead', async () => {
    const v = (await getJson(`${s.url}/leader`)).body;
    return v.isSelf && v;
  });
  assert.equal((await getJson(`${s.url}/healthz`)).status, 200);

  const lock = lockDatabase(path);
  let unhealthy: { status: number; body: any };
  try {
    unhealthy = await waitFor(
      '/healthz to fail',
      async () => {
        const r = await getJson(`${s.url}/healthz`);
        return r.status === 503 && r;
      },
      10_000,
      100,
    );
    assert.equal(unhealthy.body.status, 'unhealthy');
    assert.match(unhealthy.body.reason, /has not renewed its lease/);
    const m = await scrape(s.url);
    assert.equal(metric(m, 'baton_is_leader', { lock: 'health' }), 0, 'stepped down on its own deadline');
    assert.ok(metric(m, 'baton_last_renew_age_seconds', { lock: 'health' })! > 1.4, 'renew age past the deadline');
    // The renewal cut off by the deadline is not an error of its own; the store's busy timeout
    // (or the standby's next read) reports one a little later.
    await waitFor('a store error counted', async () => metric(await scrape(s.url), 'baton_store_errors_total', { lock: 'health' })! >= 1, 10_000, 100);
    assert.ok(logLines(s.proc.stderr).some((l) => l.event === 'stopped' && l.reason === 'renew-deadline'));
  } finally {
    lock.release();
  }
  // Once writes go through again it leads again (a new term) and is healthy.
  const again = await waitFor('to lead again', async () => {
    const v = (await getJson(`${s.url}/leader`)).body;
    return v.isSelf && v;
  }, 15_000, 100);
  assert.ok(again.term > led.term);
  assert.equal((await getJson(`${s.url}/healthz`)).status, 200);
});
