/**
 * POST /step-down on real `baton serve` processes: disabled without a token (403), 401 on a
 * missing or wrong token, 409 on a standby, 200 on the leader with the token — and then the
 * lease really moves to the standby, as a handover (released, then acquired), not a failover.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { BatonProcess, TempDir, cleanEnv, runCli, waitFor } from '../harness/cli.js';
import { SERVE_TIMING, getJson, logLines, startServe } from './serve-harness.js';

const dir = new TempDir();
const started: BatonProcess[] = [];
after(async () => {
  await Promise.all(started.map((b) => b.kill()));
  dir.remove();
});

const TOKEN = 'step-down-token-0123456789';
const post = (url: string, token?: string) =>
  getJson(`${url}/step-down`, { method: 'POST', headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });

test('without a configured token, /step-down is refused with 403 even to a correct-looking token', async () => {
  const s = await startServe(['--store', dir.sqlite('off.db'), '--lock', 'off', ...SERVE_TIMING], cleanEnv(dir.path), started);
  await waitFor('to lead', async () => (await getJson(`${s.url}/leader`)).body.isSelf);
  assert.equal((await post(s.url)).status, 403);
  assert.equal((await post(s.url, TOKEN)).status, 403);
  assert.equal((await getJson(`${s.url}/step-down`)).status, 405, 'GET is not a way to step down');
  assert.equal((await getJson(`${s.url}/leader`)).body.isSelf, true, 'still leading');
});

test('with a token: 401 without or with a wrong one, 409 on a standby, 200 on the leader, and the lease moves to the standby', async () => {
  const tokenFile = dir.join('token');
  writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
  const env = cleanEnv(dir.path);
  const args = ['--store', dir.sqlite('on.db'), '--lock', 'on', '--step-down-token-file', tokenFile, ...SERVE_TIMING];
  const a = await startServe(args, env, started);
  const led = await waitFor('a to lead', async () => {
    const v = (await getJson(`${a.url}/leader`)).body;
    return v.isSelf && v;
  });
  // b gets its token from the environment instead of a file.
  const b = await startServe(['--store', dir.sqlite('on.db'), '--lock', 'on', ...SERVE_TIMING], { ...env, BATON_STEP_DOWN_TOKEN: TOKEN }, started);
  await waitFor('b to see a', async () => (await getJson(`${b.url}/leader`)).body.holder === a.identity);

  const missing = await post(a.url);
  assert.equal(missing.status, 401);
  const wrong = await post(a.url, `${TOKEN}x`);
  assert.equal(wrong.status, 401);
  assert.equal((await post(a.url, 'short')).status, 401);
  assert.equal((await getJson(`${a.url}/leader`)).body.isSelf, true, 'refused requests change nothing');
  assert.ok(logLines(a.proc.stderr).some((l) => l.event === 'step-down-refused'));

  const standby = await post(b.url, TOKEN);
  assert.equal(standby.status, 409);
  assert.equal(standby.body.holder, a.identity);

  const ok = await post(a.url, TOKEN);
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.equal(ok.body.steppedDown, true);
  assert.equal(ok.body.term, led.term);
  assert.ok(logLines(a.proc.stderr).some((l) => l.event === 'stopped' && l.reason === 'resigned' && l.term === led.term));
  // Leadership moves to the standby, and both sides say so.
  const moved = await waitFor('b to lead', async () => {
    const v = (await getJson(`${b.url}/leader`)).body;
    return v.isSelf && v;
  }, 10_000, 50);
  assert.ok(moved.term > led.term, `term grew: ${led.term} -> ${moved.term}`);
  const aView = await waitFor('a to see b', async () => {
    const v = (await getJson(`${a.url}/leader`)).body;
    return v.holder === b.identity && v;
  });
  assert.equal(aView.isSelf, false);
  assert.equal(aView.term, moved.term);
  const timeline = (await getJson(`${b.url}/api/state`)).body.timeline;
  assert.ok(timeline.some((e: any) => e.kind === 'released' && e.term === led.term && e.previousHolder === a.identity), JSON.stringify(timeline));
  assert.ok(timeline.some((e: any) => e.kind === 'acquired' && e.term === moved.term && e.holder === b.identity), 'a handover: released, then acquired');
  assert.ok(!timeline.some((e: any) => e.kind === 'failover'));
});

test('bad token configuration is a one-line config error (exit 78)', async () => {
  const env = cleanEnv(dir.path);
  const missingFile = await runCli(['serve', '--store', dir.sqlite('bad.db'), '--lock', 'x', '--step-down-token-file', dir.join('nope')], { env });
  assert.equal(missingFile.code, 78);
  assert.match(missingFile.stderr, /^baton: --step-down-token-file .*nope: cannot read it \(ENOENT\)\n$/);
  const tooShort = await runCli(['serve', '--store', dir.sqlite('bad.db'), '--lock', 'x'], { env: { ...env, BATON_STEP_DOWN_TOKEN: 'abc' } });
  assert.equal(tooShort.code, 78);
  assert.match(tooShort.stderr, /^baton: BATON_STEP_DOWN_TOKEN: the token must be at least 8 characters/);
  const badListen = await runCli(['serve', '--store', dir.sqlite('bad.db'), '--lock', 'x', '--listen', 'localhost:99999'], { env });
  assert.equal(badListen.code, 64);
  assert.equal(badListen.stderr.split('\n').length, 2, badListen.stderr);
  const noLock = await runCli(['serve', '--store', dir.sqlite('bad.db')], { env });
  assert.equal(noLock.code, 64);
});
