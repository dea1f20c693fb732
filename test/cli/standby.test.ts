/**
 * A CLI that talks to a person, with real processes on a SQLite store: a standby says whom it
 * waits for (once, and again when the leader changes), `--quiet` silences that, `--log-format
 * json` makes every stderr line an object; `status` and `release` explain a holder whose
 * process is gone; a command that is there but not executable exits 126; and `--keep-running
 * --timeout` does not count baton's own pause after a release against the timeout.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { BatonProcess, TempDir, cleanEnv, lines, runCli, waitFor } from '../harness/cli.js';

const dir = new TempDir();
const store = dir.sqlite('standby.db');
const env = cleanEnv(dir.path, { BATON_STORE: store });
const TIMING = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms'];
const started: BatonProcess[] = [];
after(async () => {
  await Promise.all(started.map((p) => p.kill()));
  dir.remove();
});

function spawn(args: string[]): BatonProcess {
  const p = new BatonProcess(args, { env });
  started.push(p);
  return p;
}

const waitingLines = (stderr: string) => lines(stderr).filter((l) => l.includes('waiting for'));

describe('a waiting standby says so on stderr', () => {
  test('run: one line when it starts waiting, one per change of leader', async () => {
    const first = spawn(['run', '--lock', 'w1', '--identity', 'first', ...TIMING, '--', 'sleep', '1.5']);
    await waitFor('first to lead', () => first.stderr.includes('elected'), 10_000);
    const b = spawn(['run', '--lock', 'w1', '--identity', 'b', ...TIMING, '--', 'sleep', '30']);
    const c = spawn(['run', '--lock', 'w1', '--identity', 'c', ...TIMING, '--', 'sleep', '30']);
    await waitFor('both standbys to say whom they wait for', () => waitingLines(b.stderr).length > 0 && waitingLines(c.stderr).length > 0, 10_000);
    for (const s of [b, c]) assert.match(waitingLines(s.stderr)[0]!, /^baton: waiting for "w1": held by first \(term 1\) since \d{4}-\d\d-\d\dT[\d:.]+Z$/);
    // first's command ends: one of b, c leads; the other says the leader changed.
    await waitFor('a new leader', () => b.stderr.includes('elected') || c.stderr.includes('elected'), 10_000);
    const [winner, standby] = b.stderr.includes('elected') ? ['b', c] : ['c', b];
    await waitFor('the standby to tell the change', () => waitingLines(standby.stderr).length === 2, 10_000);
    assert.match(waitingLines(standby.stderr)[1]!, new RegExp(`^baton: waiting for "w1": now held by ${winner} \\(term 2\\) since `));
    await b.kill();
    await c.kill();
    assert.equal(waitingLines(standby.stderr).length, 2, 'no line while nothing changed');
  });

  test('--quiet: nothing while waiting; the give-up is still one line', async () => {
    const holder = spawn(['run', '--lock', 'w2', '--identity', 'holder', ...TIMING, '--', 'sleep', '30']);
    await waitFor('the holder to lead', () => holder.stderr.includes('elected'), 10_000);
    const r = await runCli(['run', '--lock', 'w2', ...TIMING, '--quiet', '--timeout', '1s', '--', 'true'], { env });
    assert.equal(r.code, 75);
    assert.equal(lines(r.stderr).length, 1, r.stderr);
    assert.match(r.stderr, /^baton: run: not elected leader of "w2" within the --timeout \(held by holder\)\n$/);
    await holder.kill();
  });

  test('--log-format json: every line an object; waiting carries lock, holder, term and since', async () => {
    const holder = spawn(['run', '--lock', 'w3', '--identity', 'holder', ...TIMING, '--', 'sleep', '30']);
    await waitFor('the holder to lead', () => holder.stderr.includes('elected'), 10_000);
    const r = await runCli(['run', '--lock', 'w3', ...TIMING, '--log-format', 'json', '--timeout', '1s', '--', 'true'], { env });
    assert.equal(r.code, 75);
    const objects = lines(r.stderr).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(objects.length, 2, r.stderr);
    assert.deepEqual({ ...objects[0], time: undefined, since: undefined, msg: undefined }, { time: undefined, level: 'info', event: 'waiting', lock: 'w3', holder: 'holder', term: objects[0]!.term, since: undefined, msg: undefined });
    assert.match(String(objects[0]!.since), /^\d{4}-/);
    assert.equal(objects[1]!.level, 'error');
    assert.equal(objects[1]!.exitCode, 75);
    assert.match(String(objects[1]!.msg), /within the --timeout/);
    await holder.kill();
  });

  test('cron and once standbys say whom they wait for too', async () => {
    const holder = spawn(['run', '--lock', 'w4', '--identity', 'holder', ...TIMING, '--', 'sleep', '30']);
    await waitFor('the holder to lead', () => holder.stderr.includes('elected'), 10_000);
    const cron = spawn(['cron', '--lock', 'w4', '--schedule', '* * * * *', ...TIMING, '--', 'true']);
    const once = spawn(['once', '--key', 'k4', '--lock', 'w4', ...TIMING, '--', 'true']);
    for (const p of [cron, once]) {
      await waitFor('a waiting line', () => waitingLines(p.stderr).length > 0, 10_000);
      assert.match(waitingLines(p.stderr)[0]!, /^baton: waiting for "w4": held by holder \(term \d+\) since /);
    }
    await Promise.all([holder.kill(), cron.kill(), once.kill()]);
  });
});

describe('a holder whose process is gone', () => {
  test('status says its pid is not running here; release says the lease is no longer renewed, without waiting out --timeout', async () => {
    const gone = spawn(['run', '--lock', 'dead', '--identity', 'gone', '--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '500ms', '--', 'sleep', '30']);
    await waitFor('it to lead', () => gone.stderr.includes('elected'), 10_000);
    await gone.kill(); // SIGKILL: nobody releases the lease
    const status = await runCli(['status', '--lock', 'dead'], { env });
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`dead: held by gone .* pid ${gone.pid} is not running on this host: the lease is no longer renewed and runs out in \\d`));
    const t0 = performance.now();
    const release = await runCli(['release', '--lock', 'dead', '--timeout', '60s'], { env });
    const tookMs = performance.now() - t0;
    assert.equal(release.code, 0, release.stderr);
    const err = lines(release.stderr);
    assert.match(err[0]!, new RegExp(`^baton: "dead": gone's process \\(pid ${gone.pid}\\) is not running on this host; its lease is no longer renewed$`));
    assert.match(err.at(-1)!, /^baton: "dead" is no longer renewed by gone \(term \d+\): its lease ran out and the next candidate takes it$/);
    assert.ok(tookMs < 30_000, `released within a lease duration, not the 60s timeout (${Math.round(tookMs)}ms)`);
  });

  test('status says "1 transition", not "1 transitions"', async () => {
    const r = await runCli(['status', '--lock', 'dead'], { env });
    assert.doesNotMatch(r.stdout, /\b1 transitions\b/);
  });
});

test('a command that is there but not executable exits 126, one not found 127', async () => {
  const file = dir.join('not-executable.sh');
  writeFileSync(file, '#!/bin/sh\nexit 0\n');
  chmodSync(file, 0o644);
  const r = await runCli(['run', '--lock', 'x126', ...TIMING, '--', file], { env });
  assert.equal(r.code, 126, r.stderr);
  assert.match(r.stderr, /cannot run .*not-executable\.sh: ".*not-executable\.sh" is not executable/);
  const missing = await runCli(['run', '--lock', 'x127', ...TIMING, '--', dir.join('nope')], { env });
  assert.equal(missing.code, 127, missing.stderr);
  assert.match(missing.stderr, /"[^"]*nope" was not found/);
});

test('--keep-running --timeout: the pause after each release does not count against the timeout', async () => {
  // The pause after a release is a retry period with jitter (up to 550ms here): longer than the
  // 300ms timeout, which only bounds waiting for another holder.
  const count = dir.join('runs');
  const script = `echo run >> '${count}'; [ "$(wc -l < '${count}')" -ge 4 ] && exec sleep 30; exit 0`;
  const b = spawn(['run', '--lock', 'keep', '--keep-running', '--timeout', '300ms', ...TIMING, '--', 'sh', '-c', script]);
  await waitFor('four runs', () => existsSync(count) && readFileSync(count, 'utf8').split('\n').filter(Boolean).length >= 4 || b.done, 15_000);
  assert.ok(!b.done, `baton must still run; stderr:\n${b.stderr}`);
  assert.equal(readFileSync(count, 'utf8').split('\n').filter(Boolean).length, 4);
  await b.kill();
});
