/**
 * Directed handover through the command line and the sidecar (issue 27), on SQLite (the default
 * store): `baton handover --to` each other candidate in turn, `--to nobody` changing nothing
 * (test/harness/handover-scenario.ts), and `POST /handover?to=ID` / `GET /candidates` on
 * `baton serve`, with and without the token. The same scenario runs on Redis in
 * handover-redis.test.ts.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { BatonProcess, TempDir, cleanEnv, runCli, waitFor } from '../harness/cli.js';
import { runHandoverScenario } from '../harness/handover-scenario.js';
import { getJson, startServe } from '../server/serve-harness.js';

const dir = new TempDir();
const started: BatonProcess[] = [];
after(async () => {
  await Promise.all(started.map((b) => b.kill()));
  dir.remove();
});

test('sqlite: baton handover --to each other candidate in turn: it leads next, after the old command stopped; --to nobody exits 1 and changes nothing', async () => {
  const r = await runHandoverScenario({ storeUrl: dir.sqlite('scenario.db'), name: 'sqlite' });
  assert.equal(new Set(r.holders).size, 3);
});

const TOKEN = 'handover-token-0123456789';
const TIMING = ['--lease-duration', '20s', '--renew-deadline', '15s', '--retry-period', '200ms'];

/** post sends POST `path` to the sidecar at `url` (with the bearer token if given); waits as long as a handover may take. */
async function post(url: string, path: string, token?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: token === undefined ? {} : { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(60_000) });
  return { status: res.status, body: await res.json() };
}

test('sidecar: POST /handover?to=ID needs the token; 200 once ID leads, 409 for a non-candidate, 400 for a bad to; GET /candidates lists the registry', async () => {
  const env = { ...cleanEnv(dir.path), BATON_STEP_DOWN_TOKEN: TOKEN };
  const store = dir.sqlite('sidecar.db');
  const lock = 'sidecar-handover';
  const common = ['--store', store, '--lock', lock, ...TIMING];
  const a = await startServe([...common, '--identity', 'side-a', '--priority', '5'], env, started);
  await waitFor('a to lead', async () => (await getJson(`${a.url}/leader`)).body.isSelf, 30_000, 100);
  const b = await startServe([...common, '--identity', 'side-b', '--app-version', '2.0.0', '--label', 'zone=z1'], env, started);
  const listed = await waitFor('both candidates in GET /candidates', async () => {
    const r = await getJson(`${b.url}/candidates`);
    return r.body.candidates?.filter((c: { live: boolean }) => c.live).length === 2 && r.body;
  }, 30_000, 100);
  assert.equal(listed.registry, true);
  assert.deepEqual(listed.candidates.map((c: { identity: string; leader: boolean }) => [c.identity, c.leader]), [['side-a', true], ['side-b', false]]);
  assert.deepEqual(listed.candidates[1].labels, { zone: 'z1' });
  assert.deepEqual(listed.preferred, { onStop: 'side-b', newest: 'side-b', oldest: 'side-a', priority: 'side-a' });

  const holder = async () => {
    const r = await runCli(['status', '--store', store, '--lock', lock, '--json'], { env });
    const s = JSON.parse(r.stdout) as { holder: string; term: number };
    return [s.holder, s.term] as const;
  };
  const before = await holder();
  assert.equal(before[0], 'side-a');

  // Refused before anything is asked: no token, a wrong one.
  assert.equal((await post(b.url, '/handover?to=side-b')).status, 401);
  assert.equal((await post(b.url, '/handover?to=side-b', 'wrong-token-0123456789')).status, 401);
  // Bad requests.
  const missing = await post(b.url, '/handover', TOKEN);
  assert.equal(missing.status, 400);
  assert.match(missing.body.error, /missing \?to=ID/);
  assert.equal((await post(b.url, '/handover?to=a%20b', TOKEN)).status, 400);
  assert.equal((await post(b.url, '/handover?to=side-b&timeout=soon', TOKEN)).status, 400);
  // Not a candidate: 409 with why; nothing changes.
  const refused = await post(b.url, '/handover?to=nobody', TOKEN);
  assert.equal(refused.status, 409);
  assert.equal(refused.body.outcome, 'not-candidate');
  assert.match(refused.body.why, /nobody/);
  assert.deepEqual(await holder(), before, 'leader and term unchanged');

  // The standby's own sidecar asks for itself: 200 once it leads, with a higher term.
  const handed = await post(b.url, '/handover?to=side-b', TOKEN);
  assert.equal(handed.status, 200, JSON.stringify(handed.body));
  assert.equal(handed.body.outcome, 'handed');
  assert.equal(handed.body.holder, 'side-b');
  assert.ok(handed.body.term > before[1]);
  const after = await holder();
  assert.deepEqual(after, ['side-b', handed.body.term]);
  await waitFor('b\'s sidecar to say it leads', async () => (await getJson(`${b.url}/leader`)).body.isSelf, 10_000, 100);
  // Asked again: already done.
  const again = await post(a.url, '/handover?to=side-b', TOKEN);
  assert.equal(again.status, 200);
  assert.equal(again.body.outcome, 'already');
});

test('sidecar: without a token, POST /handover is disabled (403); GET /candidates on a sidecar that is not registered itself still lists the registry', async () => {
  const env = cleanEnv(dir.path);
  const store = dir.sqlite('notoken.db');
  const s = await startServe(['--store', store, '--lock', 'notoken', ...TIMING], env, started);
  const r = await post(s.url, '/handover?to=x');
  assert.equal(r.status, 403);
  assert.match(r.body.error, /handover is disabled/);
  const c = await getJson(`${s.url}/candidates`);
  assert.equal(c.status, 200);
  assert.equal(c.body.registry, true);
  assert.deepEqual(c.body.candidates, [], 'not registered without a candidate flag');
});
