/**
 * Store credentials never leave `baton serve`: not in its logs (human or JSON), not in any
 * endpoint, not on the dashboard. The SQLite case runs a real store whose URL carries a secret
 * in its query string (SQLite ignores it, so the store works while the URL is shown on the
 * page and in the logs); the PostgreSQL-style URL case checks what is printed before or while
 * failing to reach a store on a closed port.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { BatonProcess, TempDir, cleanEnv, runCli, waitFor } from '../harness/cli.js';
import { SERVE_TIMING, getJson, startServe } from './serve-harness.js';

const dir = new TempDir();
const started: BatonProcess[] = [];
after(async () => {
  await Promise.all(started.map((b) => b.kill()));
  dir.remove();
});

const SECRET = 'hunter2-s3cret-Zq9';
const TOKEN = 'tok-7f3a9c1e5b2d8046';

async function text(url: string): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  return res.text();
}

/** firstEvent reads the stream's first message (the snapshot) and disconnects. */
async function firstEvent(url: string): Promise<string> {
  const ac = new AbortController();
  const res = await fetch(url, { signal: ac.signal });
  const reader = res.body!.getReader();
  let out = '';
  while (!out.includes('\n\n', out.indexOf('event: snapshot'))) {
    const { value, done } = await reader.read();
    if (done) break;
    out += Buffer.from(value).toString();
  }
  ac.abort();
  return out;
}

test('a secret in the store URL is shown redacted and never in clear (sqlite store, real run)', async () => {
  const tokenFile = dir.join('token');
  writeFileSync(tokenFile, TOKEN, { mode: 0o600 });
  // sqlite: refuses URL options, so the secret-looking part rides in the file name: what is
  // checked is that anything shaped like `&password=…` is hidden wherever the URL is shown.
  const store = `sqlite:${dir.join('r.db')}&password=${SECRET}`;
  for (const format of ['json', 'human']) {
    const s = await startServe(['--store', store, '--lock', `redact-${format}`, '--step-down-token-file', tokenFile, '--log-format', format, ...SERVE_TIMING], cleanEnv(dir.path), started);
    await waitFor('to lead', async () => (await getJson(`${s.url}/leader`)).body.isSelf);
    const bodies = [
      await text(`${s.url}/`),
      await text(`${s.url}/leader`),
      await text(`${s.url}/api/state`),
      await text(`${s.url}/metrics`),
      await text(`${s.url}/healthz`),
      await text(`${s.url}/readyz`),
      await firstEvent(`${s.url}/events`),
    ];
    await getJson(`${s.url}/step-down`, { method: 'POST', headers: { authorization: 'Bearer wrong-token-123' } });
    s.proc.signal('SIGTERM');
    const res = await s.proc.waitForExit(10_000);
    assert.equal(res.code, 0, res.stderr);
    const everything = [...bodies, res.stdout, res.stderr].join('\n');
    assert.ok(!everything.includes(SECRET), 'the store password appears somewhere');
    assert.ok(!everything.includes(TOKEN), 'the step-down token appears somewhere');
    // Not vacuous: the URL *is* shown — redacted — in the state the page renders and in the log.
    const state = JSON.parse(bodies[2]!);
    assert.equal(state.store, `sqlite:${dir.join('r.db')}&password=***`);
    assert.ok(res.stderr.includes('password=***'), res.stderr);
  }
});

test('a PostgreSQL-style URL with a password is never printed or served, whatever happens to the connection', async () => {
  const url = `postgres://app:${SECRET}@127.0.0.1:1/baton`;
  for (const format of ['json', 'human']) {
    for (const how of ['flag', 'env'] as const) {
      const args = ['serve', '--lock', 'x', '--log-format', format, '--listen', '127.0.0.1:0', '--debug', ...(how === 'flag' ? ['--store', url] : [])];
      const env = cleanEnv(dir.path, how === 'env' ? { BATON_STORE: url } : {});
      const p = new BatonProcess(args, { env });
      started.push(p);
      // Either baton refuses the store at once, or it serves while the store stays unreachable.
      const served = await waitFor('a verdict', () => p.done || /serving \\?"x\\?" on (http:\/\/[0-9.:]+)/.exec(p.stderr)?.[1], 15_000);
      const bodies: string[] = [];
      if (typeof served === 'string') {
        await waitFor('a store error', () => p.stderr.includes('ECONNREFUSED') || p.stderr.includes('store error'), 10_000, 50);
        const ready = await getJson(`${served}/readyz`);
        assert.equal(ready.status, 503, 'not ready while the store cannot be reached');
        for (const path of ['/', '/leader', '/api/state', '/metrics', '/healthz']) bodies.push(await text(`${served}${path}`));
        bodies.push(await firstEvent(`${served}/events`));
        p.signal('SIGTERM');
      }
      const r = await p.waitForExit(15_000);
      assert.ok(r.stderr.trim() !== '', 'it says what is going on');
      const everything = [...bodies, r.stdout, r.stderr].join('\n');
      assert.ok(!everything.includes(SECRET), `the password was printed or served:\n${r.stderr}`);
      if (typeof served === 'string') assert.ok(everything.includes('app:***@127.0.0.1:1'), 'the redacted URL is shown');
    }
  }
});
