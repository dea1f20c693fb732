/**
 * `baton status`, `baton is-leader`, `baton release` and `baton demo` against real `baton run`
 * holders on an embedded SQLite store.
 */
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { after, before, describe, test } from 'node:test';
import { BatonProcess, TempDir, childCommand, cleanEnv, lines, readChildLog, runCli, waitFor } from '../harness/cli.js';

const TIMING = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms'];
const dir = new TempDir();
const store = dir.sqlite('status.db');
const log = dir.join('children.log');
const env = cleanEnv(dir.path, { CHILD_LOG: log });
const started: BatonProcess[] = [];
/** baton runs one command (args[0]) on this file's store. */
const baton = (args: string[]) => runCli([args[0]!, '--store', store, ...args.slice(1)], { env });

function holder(lock: string, identity: string): BatonProcess {
  const b = new BatonProcess(['run', '--store', store, '--lock', lock, '--identity', identity, ...TIMING, '--', ...childCommand()], { env });
  started.push(b);
  return b;
}
const startOf = (identity: string) => readChildLog(log).find((l) => l.kind === 'start' && l.identity === identity);

// The demo takes about six seconds: start it now, check it last.
const demo = new BatonProcess(['demo'], { env });
started.push(demo);

let held: BatonProcess;
before(async () => {
  held = holder('held', 'holder-1');
  const freed = await baton(['run', '--lock', 'freed', '--identity', 'once', ...TIMING, '--', 'true']);
  assert.equal(freed.code, 0, freed.stderr);
  await waitFor('holder-1 to start its command', () => startOf('holder-1'), 10_000);
});
after(async () => {
  await Promise.all(started.map((b) => b.kill()));
  dir.remove();
});

interface Status {
  lock: string;
  holder: string | null;
  term: number;
  hostname: string | null;
  pid: number | null;
  acquiredAt: string | null;
  renewedAt: string | null;
  leaseDurationMs: number;
  transitions: number;
}

describe('baton status', () => {
  test('--json --lock: every field of a held lock', async () => {
    const r = await baton(['status', '--lock', 'held', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const s = JSON.parse(r.stdout) as Status;
    for (const key of ['lock', 'holder', 'term', 'hostname', 'pid', 'acquiredAt', 'renewedAt', 'leaseDurationMs', 'transitions']) {
      assert.ok(key in s, `missing ${key} in ${r.stdout}`);
    }
    assert.equal(s.lock, 'held');
    assert.equal(s.holder, 'holder-1');
    assert.equal(s.term, 1);
    assert.equal(s.hostname, hostname());
    assert.equal(s.pid, held.pid, 'pid is the holding baton process');
    assert.equal(s.leaseDurationMs, 2000);
    assert.equal(s.transitions, 1);
    const acquired = Date.parse(s.acquiredAt!);
    const renewed = Date.parse(s.renewedAt!);
    assert.ok(Number.isFinite(acquired) && Number.isFinite(renewed), `${s.acquiredAt} / ${s.renewedAt}`);
    assert.ok(renewed >= acquired && renewed <= Date.now() + 1000);
  });

  test('--json without --lock: an array of every lock', async () => {
    const r = await baton(['status', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const all = JSON.parse(r.stdout) as Status[];
    const byLock = new Map(all.map((s) => [s.lock, s]));
    assert.equal(byLock.get('held')?.holder, 'holder-1');
    assert.equal(byLock.get('freed')?.holder, null);
    assert.equal(byLock.get('freed')?.term, 1);
    assert.equal(byLock.get('freed')?.transitions, 1);
  });

  test('--json for a lock never held', async () => {
    const r = await baton(['status', '--lock', 'never', '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), {
      lock: 'never', holder: null, term: 0, hostname: null, pid: null, acquiredAt: null, renewedAt: null,
      leaseDurationMs: 0, expiresInMs: null, transitions: 0, stepDownRequested: false, version: null,
    });
  });

  test('text, with and without --lock', async () => {
    const one = await baton(['status', '--lock', 'held']);
    assert.equal(one.code, 0, one.stderr);
    assert.match(one.stdout, new RegExp(`^held: held by holder-1 \\(term 1\\) on ${hostname()} pid ${held.pid}; acquired .*; 1 transition$`, 'm'));
    const all = await baton(['status']);
    assert.equal(all.code, 0, all.stderr);
    const out = lines(all.stdout);
    assert.match(out[0]!, /^store: sqlite:/);
    assert.ok(out.includes('freed: free (last term 1; 1 transition)'), all.stdout);
    assert.ok(out.some((l) => l.startsWith('held: held by holder-1 (term 1)')), all.stdout);
    const never = await baton(['status', '--lock', 'never']);
    assert.match(never.stdout, /^never: never held$/m);
  });
});

describe('baton is-leader', { concurrency: true }, () => {
  const cases: [string, string[], number][] = [
    ['a holder on this host', ['--lock', 'held'], 0],
    ['--identity of the holder', ['--lock', 'held', '--identity', 'holder-1'], 0],
    ['--identity of someone else', ['--lock', 'held', '--identity', 'holder-2'], 1],
    ['a released lock', ['--lock', 'freed'], 1],
    ['a lock never held', ['--lock', 'never'], 1],
  ];
  for (const [name, args, code] of cases) {
    test(`${name}: exit ${code}`, async () => {
      const r = await baton(['is-leader', ...args]);
      assert.equal(r.code, code, r.stderr);
      assert.equal(r.stdout, '');
    });
  }
});

describe('baton release', () => {
  test('exit 1 when --identity does not hold the lock, or nobody does', async () => {
    const other = await baton(['release', '--lock', 'held', '--identity', 'holder-2', '--timeout', '2s']);
    assert.equal(other.code, 1, other.stderr);
    assert.match(other.stderr, /not held by holder-2/);
    const free = await baton(['release', '--lock', 'freed', '--timeout', '2s']);
    assert.equal(free.code, 1, free.stderr);
    assert.ok(!held.done, 'the holder was left alone');
  });

  test('exit 0 once the holder has stopped its command and released', async () => {
    const r = await baton(['release', '--lock', 'held', '--identity', 'holder-1', '--timeout', '5s']);
    assert.equal(r.code, 0, r.stderr);
    // The holder stopped its command before letting go.
    const child = startOf('holder-1')!;
    assert.ok(readChildLog(log).some((l) => l.kind === 'stop' && l.pid === child.pid), 'the command got SIGTERM');
    const exit = await held.waitForExit(5_000);
    assert.equal(exit.code, 75, `baton run exits 75 when it loses leadership: ${exit.stderr}`);
    assert.match(exit.stderr, /step-down-requested/);
    const after = await baton(['is-leader', '--lock', 'held']);
    assert.equal(after.code, 1);
    const s = JSON.parse((await baton(['status', '--lock', 'held', '--json'])).stdout) as Status;
    assert.equal(s.holder, null);
    assert.equal(s.term, 1);
  });

  test('exit 75 on timeout when the holder never lets go (SIGSTOPped)', async () => {
    const stuck = holder('stuck', 'stuck-1');
    await waitFor('stuck-1 to start its command', () => startOf('stuck-1'), 10_000);
    stuck.signal('SIGSTOP');
    try {
      const t0 = performance.now();
      const r = await baton(['release', '--lock', 'stuck', '--timeout', '1s']);
      assert.equal(r.code, 75, r.stderr);
      assert.ok(performance.now() - t0 >= 1000, 'waited out the timeout');
      assert.equal(lines(r.stderr).length, 1, r.stderr);
      assert.match(r.stderr, /^baton: release: "stuck" is still held by stuck-1 \(term 1\)/);
    } finally {
      await stuck.kill();
    }
  });
});

test('baton demo exits 0 and prints both figures', async () => {
  const r = await demo.waitForExit(30_000);
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
  const failover = /crash failover:\s+(\d+) ms/.exec(r.stdout);
  const handover = /graceful handover:\s+(\d+) ms/.exec(r.stdout);
  assert.ok(failover && handover, r.stdout);
  assert.match(r.stdout, /terms: (\d+) → (\d+) → (\d+)/);
  console.log(`demo: crash failover ${failover[1]} ms, graceful handover ${handover[1]} ms`);
});
