/**
 * One lease view for every reader: `baton status`, `baton is-leader`, the dashboard's table
 * (/api/state) and the view itself agree on a live holder and on an expired one (a holder that
 * was SIGKILLed and never released): expired means free, with its term and transitions kept.
 * Real processes on an embedded SQLite store.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { leaseView } from '../../src/view/lease-view.js';
import { toStatus } from '../../src/cli/commands/status.js';
import { BatonProcess, TempDir, cleanEnv, runCli, waitFor } from '../harness/cli.js';
import { SERVE_TIMING, getJson, startServe } from './serve-harness.js';

const dir = new TempDir();
const started: BatonProcess[] = [];
after(async () => {
  await Promise.all(started.map((b) => b.kill()));
  dir.remove();
});

const TIMING = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms'];

test('leaseView: a holder past its lease is expired and shown as free', () => {
  const record = {
    lock: 'l', holder: 'ghost', term: 3, acquiredAt: 1_000, renewedAt: 1_000, leaseDurationMs: 2_000, transitions: 3,
    stepDownRequested: false, metadata: { hostname: 'h', pid: 7, version: '1' },
  };
  const live = leaseView(record as never, { nowWallMs: 2_500 });
  assert.deepEqual([live.holder, live.live, live.expired, live.expiresInMs, live.hostname], ['ghost', true, false, 500, 'h']);
  const gone = leaseView(record as never, { nowWallMs: 3_000 });
  assert.deepEqual([gone.holder, gone.live, gone.expired, gone.expiresInMs, gone.hostname, gone.term, gone.transitions], [null, false, true, null, null, 3, 3]);
  assert.equal(toStatus(gone).holder, null);
  assert.equal(leaseView(record as never, { nowWallMs: 9_000, serverExpiry: true }).live, true, 'a store that expires records itself: a record that exists is live');
  assert.equal(leaseView(record as never, { nowWallMs: 0, exactExpiresInMs: 0 }).live, false, 'the leader\'s exact expiry decides');
});

test('status and the dashboard agree on a live holder, and on the same holder once its lease expired', async () => {
  const env = cleanEnv(dir.path);
  const store = dir.sqlite('agree.db');
  const status = async () => {
    const r = await runCli(['status', '--store', store, '--lock', 'gone', '--json'], { env });
    // status never creates the store: until the holder has, there is nothing to show.
    if (r.code === 78 && r.stderr.includes('no store at')) return {};
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };
  const row = async (url: string) => ((await getJson(`${url}/api/state`)).body.locks as Record<string, unknown>[]).find((l) => l.lock === 'gone');

  const holder = new BatonProcess(['run', '--store', store, '--lock', 'gone', '--identity', 'ghost', ...TIMING, '--', 'sleep', '60'], { env });
  started.push(holder);
  await waitFor('ghost to hold "gone"', async () => (await status()).holder === 'ghost', 10_000, 100);
  const serve = await startServe(['--store', store, '--lock', 'served', ...SERVE_TIMING], env, started);

  const liveRow = await waitFor('the dashboard to list "gone"', () => row(serve.url), 10_000, 100);
  assert.equal(liveRow.holder, 'ghost', 'the dashboard names the live holder');
  const isLeader = await runCli(['is-leader', '--store', store, '--lock', 'gone', '--identity', 'ghost'], { env });
  assert.equal(isLeader.code, 0, 'is-leader: the live holder leads');

  // The holder dies without releasing: its record stays, naming it, until the lease runs out.
  holder.signal('SIGKILL');
  await holder.exited;
  const expired = await waitFor('the lease to expire', async () => {
    const s = await status();
    return s.holder === null && s;
  }, 10_000, 100);
  const expiredRow = (await row(serve.url))!;
  assert.deepEqual(
    { holder: expiredRow.holder, term: expiredRow.term, transitions: expiredRow.transitions, expiresInMs: expiredRow.expiresInMs },
    { holder: expired.holder, term: expired.term, transitions: expired.transitions, expiresInMs: expired.expiresInMs },
    'the dashboard shows what status shows',
  );
  assert.equal(expiredRow.holder, null, 'an expired holder is free on the dashboard too');
  assert.ok((expired.term as number) >= 1, 'the last term is kept');
  const text = await runCli(['status', '--store', store, '--lock', 'gone'], { env });
  assert.match(text.stdout, /^gone: free \(last term \d+; \d+ transitions?\)$/m);
  const notLeader = await runCli(['is-leader', '--store', store, '--lock', 'gone', '--identity', 'ghost'], { env });
  assert.equal(notLeader.code, 1, 'is-leader: an expired holder does not lead');
});
