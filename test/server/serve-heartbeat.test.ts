/**
 * `baton serve --progress-timeout` on real processes (issue 28): the app beside the sidecar
 * reports progress with POST /heartbeat (the /step-down token); while it does, the sidecar
 * leads; when it stops, the leader steps down (reason hung), the standby takes over, and the
 * metrics and `baton status` say why.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { BatonProcess, TempDir, cleanEnv, delay, runCli, waitFor } from '../harness/cli.js';
import { SERVE_TIMING, getJson, logLines, metric, scrape, startServe } from './serve-harness.js';

const dir = new TempDir();
const started: BatonProcess[] = [];
after(async () => {
  await Promise.all(started.map((b) => b.kill()));
  dir.remove();
});

const TOKEN = 'heartbeat-token-0123456789';
const beat = (url: string, token?: string) =>
  getJson(`${url}/heartbeat`, { method: 'POST', headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });

test('POST /heartbeat keeps the sidecar leading; when heartbeats stop it steps down (hung) and the standby leads', async () => {
  const env = { ...cleanEnv(dir.path), BATON_STEP_DOWN_TOKEN: TOKEN };
  const store = dir.sqlite('hb.db');
  const args = ['--store', store, '--lock', 'hb', '--progress-timeout', '1500ms', '--log-format', 'json', ...SERVE_TIMING];
  const a = await startServe(args, env, started);
  await waitFor('a to lead', async () => (await getJson(`${a.url}/leader`)).body.isSelf, 20_000);
  const b = await startServe(args, env, started);
  await waitFor('b to see a', async () => (await getJson(`${b.url}/leader`)).body.holder === a.identity, 20_000);

  assert.equal((await beat(a.url)).status, 401, 'no token');
  assert.equal((await beat(b.url, TOKEN)).status, 409, 'a standby has nothing to report');
  // Heartbeats every 300 ms for longer than the timeout: a keeps leading.
  for (let i = 0; i < 10; i++) {
    const r = await beat(a.url, TOKEN);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await delay(300);
  }
  assert.equal((await getJson(`${a.url}/leader`)).body.isSelf, true, 'heartbeats keep it leading');

  // Silence: a steps down as hung and b leads.
  await waitFor('b to lead', async () => (await getJson(`${b.url}/leader`)).body.isSelf, 20_000, 100);
  const stopped = logLines(a.proc.stderr).find((l) => l.event === 'stopped');
  assert.equal(stopped?.reason, 'hung', a.proc.stderr);
  assert.match(String(stopped?.note), /no progress within 1500ms/);
  // b gets no heartbeats either, so the two may take turns (ever more slowly): at least one.
  assert.ok(metric(await scrape(a.url), 'baton_step_downs_total', { lock: 'hb', reason: 'hung' })! >= 1);
  const status = await runCli(['status', '--store', store, '--lock', 'hb', '--json'], { env });
  const view = JSON.parse(status.stdout) as { lastStepDown?: { holder: string; reason: string } };
  assert.ok([a.identity, b.identity].includes(view.lastStepDown?.holder ?? ''), status.stdout);
  assert.equal(view.lastStepDown?.reason, 'hung');
});

test('--progress-timeout without a token is a configuration error (78), one line', async () => {
  const r = await runCli(['serve', '--store', dir.sqlite('none.db'), '--lock', 'x', '--progress-timeout', '5s', '--listen', '127.0.0.1:0'], { env: cleanEnv(dir.path) });
  assert.equal(r.code, 78, r.stderr);
  assert.match(r.stderr, /--progress-timeout needs a token/);
  assert.equal(r.stderr.trim().split('\n').length, 1);
});
