/**
 * `baton once` as real processes on a real (SQLite) store: three contenders for one key, the
 * runner SIGKILLed mid-run, a takeover, the outcome surviving every process, then --no-wait,
 * --status and --rerun. Short leases keep it fast; bounds are generous.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { SqliteStore } from '../../src/stores/sqlite/index.js';
import { BatonProcess, TempDir, cleanEnv, lines, pidAlive, runCli, waitFor } from '../harness/cli.js';

const TIMING = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms'];
const dir = new TempDir();
const started: BatonProcess[] = [];
after(async () => {
  await Promise.all(started.map((b) => b.kill()));
  dir.remove();
});
const storePath = dir.join('once.db');
const log = dir.join('once.log');
const env = cleanEnv(dir.path, { BATON_STORE: `sqlite:${storePath}`, ONCE_LOG: log });
const logLines = () => {
  try {
    return lines(readFileSync(log, 'utf8'));
  } catch {
    return [];
  }
};
/** A migration that takes a while and fails with exit 3. */
const SLOW_FAILING = ['sh', '-c', 'echo "start $$ $BATON_KEY $BATON_ATTEMPT $BATON_TERM" >> "$ONCE_LOG"; sleep 3; echo "done $$ $BATON_KEY" >> "$ONCE_LOG"; exit 3'];
const spawnOnce = (args: string[], command: string[]) => {
  const b = new BatonProcess(['once', ...args, ...TIMING, '--', ...command], { env });
  started.push(b);
  return b;
};
const readHolderPid = async (lock: string) => {
  const s = new SqliteStore(storePath);
  try {
    const r = await s.read(lock);
    return r?.holder ? (r.metadata.pid as number) : undefined;
  } finally {
    await s.close();
  }
};

test('three contenders, the runner SIGKILLed mid-run: one completed run, everyone exits with its code, and so does a later instance', async () => {
  const contenders = [1, 2, 3].map(() => spawnOnce(['--key', 'v1'], SLOW_FAILING));
  const first = await waitFor('the first run to start', () => logLines().find((l) => l.startsWith('start ')), 15_000).catch((err: Error) => {
    throw new Error(`${err.message}; stderr: ${contenders.map((c) => c.stderr).join(' | ')}`);
  });
  const firstPid = Number(first.split(' ')[1]);
  const runnerPid = await waitFor('the runner\'s lease', () => readHolderPid('once/v1'));
  const runner = contenders.find((c) => c.pid === runnerPid)!;
  assert.ok(runner, 'the lease holder is one of the contenders');
  runner.signal('SIGKILL');
  const survivors = contenders.filter((c) => c !== runner);
  const second = await waitFor('another contender to take over', () => logLines().filter((l) => l.startsWith('start '))[1], 15_000);
  // The dead runner's command was stopped before anyone else could take the lock.
  assert.equal(pidAlive(firstPid), false, 'the first run was still alive when the second started');
  assert.match(second, /^start \d+ v1 2 \d+$/, 'the takeover is attempt 2');
  const results = await Promise.all(survivors.map((s) => s.waitForExit(20_000)));
  assert.deepEqual(results.map((r) => r.code), [3, 3], results.map((r) => r.stderr).join('\n---\n'));
  const starts = logLines().filter((l) => l.startsWith('start '));
  const dones = logLines().filter((l) => l.startsWith('done '));
  assert.equal(starts.length, 2);
  assert.equal(dones.length, 1, 'exactly one run completed');
  assert.equal(dones[0]!.split(' ')[1], second.split(' ')[1]);
  const waiterErr = results.find((r) => /failed with exit 3/.test(r.stderr));
  assert.ok(waiterErr, 'the waiter reports the recorded failure');

  // Every instance is gone. A new one — as after a fleet replacement — reads the outcome from the store.
  const later = await runCli(['once', '--key', 'v1', ...TIMING, '--', ...SLOW_FAILING], { env });
  assert.equal(later.code, 3);
  assert.match(later.stderr, /^baton: once v1: failed with exit 3 on \S+ at \S+; not running sh again \(use --rerun to run it again\)\n$/);
  assert.equal(logLines().filter((l) => l.startsWith('start ')).length, 2, 'the later instance did not run the command');

  const status = await runCli(['once', '--status', '--key', 'v1', '--json'], { env });
  assert.equal(status.code, 1, '--status exits 1 when not done');
  const record = JSON.parse(status.stdout);
  assert.deepEqual([record.status, record.exitCode, record.attempt, record.tookOverFrom?.attempt], ['failed', 3, 2, 1]);
  assert.equal(record.previous[0].status, 'running', 'the dead runner\'s attempt is kept in the history');
  const text = await runCli(['once', '--status', '--key', 'v1'], { env });
  assert.match(text.stdout, /^once v1: failed \(exit 3\) by \S+ on \S+ pid \d+, term \d+, attempt 2; started \S+, finished \S+; took over from \S+ \(term \d+\)\n$/);

  // --rerun runs a failed key again, once.
  const rerun = await runCli(['once', '--key', 'v1', '--rerun', ...TIMING, '--', 'sh', '-c', 'echo "rerun $BATON_ATTEMPT" >> "$ONCE_LOG"'], { env });
  assert.equal(rerun.code, 0, rerun.stderr);
  const again = await runCli(['once', '--key', 'v1', '--rerun', ...TIMING, '--', 'sh', '-c', 'echo "rerun-again" >> "$ONCE_LOG"'], { env });
  assert.equal(again.code, 0);
  assert.match(again.stderr, /already done .* \(--rerun only reruns a failed run\)/);
  assert.deepEqual(logLines().filter((l) => l.startsWith('rerun')), ['rerun 3']);
  assert.equal((await runCli(['once', '--status', '--key', 'v1'], { env })).code, 0, '--status exits 0 once done');
});

test('every instance SIGKILLed mid-run at once (a fleet replaced): the new fleet finishes the key, once', async () => {
  const old = [1, 2, 3].map(() => spawnOnce(['--key', 'fleet'], SLOW_FAILING));
  await waitFor('the run to start', () => logLines().find((l) => / fleet 1 /.test(l)), 10_000);
  await Promise.all(old.map((p) => p.kill()));
  // The record says "running", and nobody is: the new instances must not trust it forever.
  const fresh = [1, 2].map(() => spawnOnce(['--key', 'fleet'], SLOW_FAILING));
  const results = await Promise.all(fresh.map((p) => p.waitForExit(20_000)));
  assert.deepEqual(results.map((r) => r.code), [3, 3], results.map((r) => r.stderr).join('\n---\n'));
  const starts = logLines().filter((l) => l.startsWith('start ') && l.includes(' fleet '));
  assert.deepEqual(starts.map((l) => l.split(' ')[3]), ['1', '2'], 'the dead fleet\'s attempt, then one takeover');
  assert.equal(logLines().filter((l) => l.startsWith('done ') && l.endsWith(' fleet')).length, 1);
});

test('--no-wait: exit 0 at once while another instance runs it, and after it is done — saying which', async () => {
  const runner = spawnOnce(['--key', 'v2'], ['sh', '-c', 'echo "start $$ v2" >> "$ONCE_LOG"; sleep 2']);
  await waitFor('the run to start', () => logLines().some((l) => l === `start ${l.split(' ')[1]} v2`), 10_000);
  const t0 = performance.now();
  const busy = await runCli(['once', '--key', 'v2', '--no-wait', ...TIMING, '--', 'sh', '-c', 'echo SHOULD-NOT >> "$ONCE_LOG"'], { env });
  assert.ok(performance.now() - t0 < 1_800, 'did not wait for the run');
  assert.equal(busy.code, 0);
  assert.match(busy.stderr, /^baton: once v2: \S+ is running it \(or its lease has not expired yet\); not waiting \(--no-wait\)\n$/);
  assert.equal((await runner.waitForExit(10_000)).code, 0);
  const done = await runCli(['once', '--key', 'v2', '--no-wait', '--', 'sh', '-c', 'echo SHOULD-NOT >> "$ONCE_LOG"'], { env });
  assert.equal(done.code, 0);
  assert.match(done.stderr, /already done by/);
  assert.ok(!logLines().includes('SHOULD-NOT'));
  const never = await runCli(['once', '--status', '--key', 'never-ran'], { env });
  assert.deepEqual([never.code, never.stdout], [1, 'once never-ran: never run\n']);
});

test('a runner frozen past its renew deadline: the watchdog stops the command, the run is recorded cut (not failed) and runs again', async () => {
  const frozen = spawnOnce(['--key', 'frozen'], ['sh', '-c', 'echo "start $$ frozen $BATON_ATTEMPT" >> "$ONCE_LOG"; sleep 6; echo "done $$ frozen" >> "$ONCE_LOG"']);
  const line = await waitFor('the run to start', () => logLines().find((l) => l.endsWith(' frozen 1')), 10_000);
  const commandPid = Number(line.split(' ')[1]);
  frozen.signal('SIGSTOP');
  try {
    await waitFor('the watchdog to stop the command at the deadline', () => !pidAlive(commandPid), 6_000, 20);
  } finally {
    frozen.signal('SIGCONT');
  }
  const r = await frozen.waitForExit(10_000);
  assert.equal(r.code, 75, r.stderr);
  assert.match(r.stderr, /the run was cut short \(.*\); another instance will run it again/);
  const status = JSON.parse((await runCli(['once', '--status', '--key', 'frozen', '--json'], { env })).stdout);
  assert.equal(status.status, 'cut', 'a command stopped by the watchdog is not a failure of the command');
  const again = await runCli(['once', '--key', 'frozen', ...TIMING, '--', 'sh', '-c', 'echo "rerun frozen $BATON_ATTEMPT" >> "$ONCE_LOG"'], { env });
  assert.equal(again.code, 0, again.stderr);
  assert.ok(logLines().includes('rerun frozen 2'));
});

test('--timeout gives up waiting with exit 75', async () => {
  const runner = spawnOnce(['--key', 'v3'], ['sh', '-c', 'echo "start $$ v3" >> "$ONCE_LOG"; sleep 3']);
  await waitFor('the run to start', () => logLines().some((l) => l.endsWith(' v3')), 10_000);
  const waited = await runCli(['once', '--key', 'v3', '--timeout', '500ms', ...TIMING, '--', 'true'], { env });
  assert.equal(waited.code, 75);
  assert.match(waited.stderr, /still being run by \S+ after the 500ms timeout/);
  await runner.kill();
});
