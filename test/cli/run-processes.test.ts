/**
 * `baton run` as real processes on a real (SQLite) store: failover after SIGKILL, graceful
 * handover on SIGTERM, the watchdog that kills the command of a frozen (SIGSTOPped) baton
 * before its lease could run out for anyone else, --keep-running, --timeout, exit codes and
 * the environment the command sees. Short leases keep it fast; bounds are generous.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { SqliteStore } from '../../src/stores/sqlite/index.js';
import {
  BatonProcess,
  TempDir,
  childCommand,
  cleanEnv,
  delay,
  lines,
  pidAlive,
  readChildLog,
  runCli,
  waitFor,
} from '../harness/cli.js';
import { assertNoOverlap, runThreeCandidateScenario } from '../harness/run-scenario.js';

const TIMING = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms'];
/** For tests that measure no failover: a starved event loop on a busy machine cannot cost the lease. */
const RELAXED = ['--lease-duration', '20s', '--renew-deadline', '15s', '--retry-period', '1s'];
const dir = new TempDir();
const started: BatonProcess[] = [];
after(async () => {
  await Promise.all(started.map((b) => b.kill()));
  dir.remove();
});

let n = 0;
/** fresh gives each test its own store file, child log and environment. */
function fresh(extraEnv: NodeJS.ProcessEnv = {}) {
  const id = n++;
  const store = dir.sqlite(`t${id}.db`);
  const log = dir.join(`t${id}.log`);
  const env = cleanEnv(dir.path, { CHILD_LOG: log, ...extraEnv });
  const spawnRun = (args: string[], command = childCommand()) => {
    const b = new BatonProcess(['run', '--store', store, ...args, '--', ...command], { env });
    started.push(b);
    return b;
  };
  const readRecord = async (lock: string) => {
    const s = new SqliteStore(store.slice('sqlite:'.length));
    try {
      return await s.read(lock);
    } finally {
      await s.close();
    }
  };
  return { store, log, env, spawnRun, readRecord, starts: () => readChildLog(log).filter((l) => l.kind === 'start') };
}

test('three candidates: SIGKILL fails over after the lease, SIGTERM hands over at once, no overlap', async () => {
  const r = await runThreeCandidateScenario({ storeUrl: dir.sqlite('scenario.db'), name: 'sqlite' });
  assert.deepEqual([...r.terms].sort((a, b) => a - b), r.terms);
  console.log(`sqlite scenario: crash failover ${r.crashFailoverMs.toFixed(0)} ms, graceful handover ${r.gracefulHandoverMs.toFixed(0)} ms`);
});

test('a SIGSTOPped baton: the watchdog kills its command at the deadline, before the lease could expire', async () => {
  const f = fresh({ CHILD_STOP_CODE: '7' });
  const b = f.spawnRun(['--lock', 'frozen', ...TIMING]);
  const start = await waitFor('the child to start', () => f.starts()[0], 10_000);
  await delay(600);
  b.signal('SIGSTOP');
  try {
    // baton is frozen: the record now shows its last renewal for good.
    const record = await f.readRecord('frozen');
    assert.ok(record && record.holder !== null, 'the frozen baton still holds the lease');
    await waitFor('the child to be killed', () => !pidAlive(start.pid), 5_000, 5);
    const deadSeenAt = Date.now();
    const stop = readChildLog(f.log).find((l) => l.kind === 'stop' && l.pid === start.pid);
    assert.ok(stop, 'the child got SIGTERM first (it logged its stop)');
    // Wall clocks of one host; renewedAt is taken when the renewal was sent.
    assert.ok(stop.wallMs >= record.renewedAt + 1500 - 100, `SIGTERM came ${stop.wallMs - record.renewedAt}ms after the last renewal, before the 1500ms deadline`);
    assert.ok(deadSeenAt < record.renewedAt + record.leaseDurationMs, `child still alive ${deadSeenAt - record.renewedAt}ms after the last renewal (lease ${record.leaseDurationMs}ms)`);
  } finally {
    b.signal('SIGCONT');
  }
  // Thawed, baton sees its deadline passed: leadership lost, exit 75 (not the child's code).
  const r = await b.waitForExit(5_000);
  assert.equal(r.code, 75, r.stderr);
  assert.match(r.stderr, /renew.deadline/);
});

test('--timeout: exit 75 when another candidate holds the lock, without running the command', async () => {
  const f = fresh();
  const holder = f.spawnRun(['--lock', 'busy', '--identity', 'holder', ...RELAXED]);
  await waitFor('the holder to start its child', () => f.starts()[0], 10_000);
  const t0 = performance.now();
  const r = await runCli(['run', '--store', f.store, '--lock', 'busy', '--identity', 'waiter', '--timeout', '1s', ...RELAXED, '--', ...childCommand()], { env: f.env });
  const took = performance.now() - t0;
  assert.equal(r.code, 75, r.stderr);
  // One line saying whom it waits for, one saying it gave up.
  const err = lines(r.stderr);
  assert.equal(err.length, 2, r.stderr);
  assert.match(err[0]!, /^baton: waiting for "busy": held by holder \(term \d+\) since \d{4}-\d\d-\d\dT/);
  assert.match(err[1]!, /^baton: .*--timeout.*held by holder/);
  assert.ok(took >= 1000, `gave up after ${took.toFixed(0)}ms, before the 1s timeout`);
  assert.equal(f.starts().length, 1, 'the waiter never ran its command');
  await holder.kill();
});

describe('exit codes', { concurrency: true }, () => {
  test('the command\'s exit code passes through, and the lease is released', async () => {
    const f = fresh({ CHILD_EXIT: '42' });
    const r = await runCli(['run', '--store', f.store, '--lock', 'code', ...RELAXED, '--', ...childCommand()], { env: f.env });
    assert.equal(r.code, 42, r.stderr);
    const record = await f.readRecord('code');
    assert.equal(record?.holder, null, 'released on exit');
    assert.equal(record?.term, 1);
  });

  test('a command killed by a signal gives 128 + the signal number', async () => {
    const f = fresh();
    const r = await runCli(['run', '--store', f.store, '--lock', 'sig', ...RELAXED, '--', 'sh', '-c', 'kill -KILL $$'], { env: f.env });
    assert.equal(r.code, 137, r.stderr);
  });

  test('a command that cannot be started gives 127 and a line naming it', async () => {
    const f = fresh();
    const r = await runCli(['run', '--store', f.store, '--lock', 'nocmd', ...RELAXED, '--', '/nonexistent/job.sh'], { env: f.env });
    assert.equal(r.code, 127, r.stderr);
    // baton's own line, or setpriv's (which execs the command for baton's watchdog).
    assert.match(r.stderr, /^(baton|setpriv): .*(cannot run|failed to execute) \/nonexistent\/job\.sh/m);
    assert.doesNotMatch(r.stderr, /^\s+at /m);
  });
});

test('the command sees BATON_LOCK, BATON_IDENTITY and BATON_TERM (the fencing token)', async () => {
  const f = fresh();
  const printEnv = [process.execPath, '-e', 'const e = process.env; console.log(JSON.stringify({ lock: e.BATON_LOCK, identity: e.BATON_IDENTITY, term: e.BATON_TERM }))'];
  const seen = [];
  for (let i = 0; i < 2; i++) {
    const r = await runCli(['run', '--store', f.store, '--lock', 'env/check', '--identity', `env-${i}`, ...RELAXED, '--', ...printEnv], { env: f.env });
    assert.equal(r.code, 0, r.stderr);
    seen.push(JSON.parse(r.stdout) as { lock: string; identity: string; term: string });
  }
  assert.deepEqual(seen, [
    { lock: 'env/check', identity: 'env-0', term: '1' },
    { lock: 'env/check', identity: 'env-1', term: '2' },
  ]);
});

describe('--keep-running', () => {
  test('reruns the command after it exits, with a new term each time', async () => {
    const f = fresh({ CHILD_RUNS: '3' });
    const b = f.spawnRun(['--lock', 'again', '--identity', 'keeper', '--keep-running', ...TIMING]);
    await waitFor('the third run', () => f.starts()[2], 10_000);
    const starts = f.starts();
    assert.deepEqual(starts.map((s) => s.identity), ['keeper', 'keeper', 'keeper']);
    assert.ok(starts[0]!.term < starts[1]!.term && starts[1]!.term < starts[2]!.term, `terms ${starts.map((s) => s.term)}`);
    assert.ok(!b.done, 'baton keeps running');
    b.signal('SIGTERM');
    const r = await b.waitForExit(5_000);
    assert.equal(r.code, 0, r.stderr);
    assertNoOverlap(readChildLog(f.log), new Map(starts.slice(0, 2).map((s) => [s.pid, s.monoNs])));
  });

  test('campaigns again after losing leadership (baton release), and runs the command again', async () => {
    const f = fresh();
    const b = f.spawnRun(['--lock', 'regain', '--identity', 'keeper', '--keep-running', ...TIMING]);
    const first = await waitFor('the first run', () => f.starts()[0], 10_000);
    const rel = await runCli(['release', '--store', f.store, '--lock', 'regain', '--timeout', '5s'], { env: f.env });
    assert.equal(rel.code, 0, rel.stderr);
    assert.ok(readChildLog(f.log).some((l) => l.kind === 'stop' && l.pid === first.pid), 'the command was stopped with SIGTERM');
    const second = await waitFor('the second run', () => f.starts()[1], 10_000);
    assert.ok(second.term > first.term);
    assert.ok(!b.done, 'baton keeps running');
    await b.kill();
  });
});
