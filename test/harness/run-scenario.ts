/**
 * The three-candidate process scenario, reusable for every store: three real `baton run`
 * processes campaign for one lock, each running a child that logs `start`/`stop` lines with
 * CLOCK_MONOTONIC timestamps to one shared file. The scenario kills the leader's baton with
 * SIGKILL (its child must die with it, and another candidate must take over after the lease),
 * then sends SIGTERM to the next leader's baton (graceful: the child is told, baton releases and
 * exits with the child's code, and the last candidate takes over at once). Throughout, the log
 * must never show two children running at once, and terms must only grow.
 *
 * It asserts with node:assert and stops every process it started, whatever happens.
 */
import assert from 'node:assert/strict';
import {
  BatonProcess,
  TempDir,
  childCommand,
  cleanEnv,
  delay,
  monoNs,
  pidAlive,
  readChildLog,
  runCli,
  waitFor,
  type LogLine,
} from './cli.js';

/** Timing every scenario uses: short, so failover after SIGKILL takes about two seconds. */
export const SCENARIO_TIMING = { leaseMs: 2000, renewDeadlineMs: 1500, retryMs: 250 } as const;

/** The child's exit code on SIGTERM, so the test can see baton pass it through. */
const STOP_CODE = 7;

/** ScenarioResult reports what the scenario measured (ms). */
export interface ScenarioResult {
  /** SIGKILL of the first leader's baton → the second child's start line. */
  crashFailoverMs: number;
  /** SIGTERM of the second leader's baton → the third candidate announcing its election. */
  gracefulHandoverMs: number;
  terms: number[];
}

/**
 * runThreeCandidateScenario runs the scenario on the store at `storeUrl` (a fresh lock name is
 * used, so a shared server is fine). `name` labels identities and the lock. `timing` replaces
 * SCENARIO_TIMING for a store whose leases cannot be that short (Azure blob leases: 15 s).
 */
export async function runThreeCandidateScenario(options: { storeUrl: string; name: string; timing?: { leaseMs: number; renewDeadlineMs: number; retryMs: number } }): Promise<ScenarioResult> {
  const label = options.name.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 40) || 'store';
  const lock = `scenario-${label}-${process.pid}-${Date.now().toString(36)}`;
  const dir = new TempDir();
  const log = dir.join('children.log');
  const env = cleanEnv(dir.path, { CHILD_LOG: log, CHILD_STOP_CODE: String(STOP_CODE) });
  const t = options.timing ?? SCENARIO_TIMING;
  const batons = new Map<string, BatonProcess>();
  const ms = (from: bigint, to: bigint) => Number(to - from) / 1e6;
  const context = () => `\nchild log:\n${readChildLog(log).map((l) => `${l.kind} ${l.term} ${l.pid} ${l.identity}`).join('\n')}\n` +
    [...batons].map(([id, b]) => `--- ${id} stderr:\n${b.stderr}`).join('\n');

  try {
    for (const suffix of ['a', 'b', 'c']) {
      const identity = `${label}-${suffix}`;
      const args = ['run', '--store', options.storeUrl, '--lock', lock, '--identity', identity,
        '--lease-duration', `${t.leaseMs}ms`, '--renew-deadline', `${t.renewDeadlineMs}ms`, '--retry-period', `${t.retryMs}ms`,
        '--', ...childCommand()];
      batons.set(identity, new BatonProcess(args, { env }));
    }
    const starts = () => readChildLog(log).filter((l) => l.kind === 'start');

    // 1. Exactly one candidate is elected and runs its child.
    const first = await waitFor('the first leader to start its child', () => starts()[0], 20_000);
    await delay(3 * t.retryMs); // several renewals; nobody else may start meanwhile
    assert.equal(starts().length, 1, `only one child may run while the first leader renews${context()}`);
    const firstBaton = batons.get(first.identity)!;
    assert.ok(firstBaton, `unknown identity ${first.identity}`);

    // 2. kill -9 the leader's baton: its child dies with it, another candidate takes over.
    const killedAt = monoNs();
    firstBaton.signal('SIGKILL');
    const r1 = await firstBaton.waitForExit(5_000);
    assert.equal(r1.signal, 'SIGKILL');
    await waitFor(`the first child (pid ${first.pid}) to die with its baton`, () => !pidAlive(first.pid), 3_000, 5);
    const firstGoneAt = monoNs();
    const second = await waitFor('a second leader to start its child', () => starts()[1], Math.max(15_000, t.leaseMs + 8_000));
    assert.notEqual(second.identity, first.identity, `the killed candidate cannot lead again${context()}`);
    assert.ok(second.term > first.term, `terms only grow: ${first.term} then ${second.term}`);
    assert.ok(second.monoNs > firstGoneAt, `the second child started before the first was seen dead${context()}`);
    const crashFailoverMs = ms(killedAt, second.monoNs);
    assert.ok(crashFailoverMs < t.leaseMs + 4_000, `failover after SIGKILL took ${crashFailoverMs.toFixed(0)}ms${context()}`);

    // 3. SIGTERM the second leader's baton: child told, baton releases, exits with the child's code.
    await delay(3 * t.retryMs);
    assert.equal(starts().length, 2, `no third child while the second leader renews${context()}`);
    const secondBaton = batons.get(second.identity)!;
    const third = [...batons.keys()].find((id) => id !== first.identity && id !== second.identity)!;
    const thirdBaton = batons.get(third)!;
    const termAt = monoNs();
    secondBaton.signal('SIGTERM');
    // A wait that runs out says what every baton printed, so a failure can be read from CI's log.
    const electedSeen = waitFor('the third candidate to announce its election', () => /elected leader/.test(thirdBaton.stderr) && monoNs(), 10_000, 5).catch((err: Error) => {
      throw new Error(`${err.message}${context()}`);
    });
    electedSeen.catch(() => {}); // awaited below; an earlier failure must not leave it unhandled
    const r2 = await secondBaton.waitForExit(5_000);
    assert.equal(r2.code, STOP_CODE, `baton must exit with its child's code on SIGTERM${context()}`);
    const stop2 = readChildLog(log).find((l) => l.kind === 'stop' && l.pid === second.pid);
    assert.ok(stop2, `the second child got SIGTERM and logged its stop${context()}`);
    await waitFor(`the second child (pid ${second.pid}) to exit`, () => !pidAlive(second.pid), 3_000, 5);
    const thirdElectedAt = await electedSeen;
    const thirdStart = await waitFor('the third leader to start its child', () => starts()[2], 10_000);
    assert.equal(thirdStart.identity, third);
    assert.ok(thirdStart.term > second.term, `terms only grow: ${second.term} then ${thirdStart.term}`);
    const gracefulHandoverMs = ms(termAt, thirdElectedAt);
    // Waiting out the lease would take at least leaseDuration − retryPeriod after the SIGTERM.
    assert.ok(gracefulHandoverMs < t.leaseMs - t.retryMs - 50, `graceful handover took ${gracefulHandoverMs.toFixed(0)}ms: the lease was not released${context()}`);
    assert.ok(ms(termAt, thirdStart.monoNs) < 3_000, `third child started ${ms(termAt, thirdStart.monoNs).toFixed(0)}ms after SIGTERM`);

    // 4. The store agrees, and the log never shows two children at once.
    const status = await runCli(['status', '--store', options.storeUrl, '--lock', lock, '--json'], { env });
    assert.equal(status.code, 0, status.stderr);
    const s = JSON.parse(status.stdout) as { holder: string; term: number };
    assert.equal(s.holder, third);
    assert.equal(s.term, thirdStart.term);
    assertNoOverlap(readChildLog(log), new Map([[first.pid, firstGoneAt]]));
    assert.equal(starts().length, 3, `exactly three children ran${context()}`);
    return { crashFailoverMs, gracefulHandoverMs, terms: [first.term, second.term, thirdStart.term] };
  } finally {
    await Promise.all([...batons.values()].map((b) => b.kill()));
    for (const l of readChildLog(log)) {
      if (pidAlive(l.pid)) {
        try {
          process.kill(l.pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
    }
    dir.remove();
  }
}

/**
 * assertNoOverlap checks that child intervals [start, end] never overlap, in start order. A
 * child's end is its stop line, else the moment the test saw it gone (`goneAt`); only the last
 * child may still be running.
 */
export function assertNoOverlap(log: LogLine[], goneAt: Map<number, bigint> = new Map()): void {
  const starts = log.filter((l) => l.kind === 'start').sort((a, b) => (a.monoNs < b.monoNs ? -1 : 1));
  let prevEnd: bigint | undefined;
  let prevPid: number | undefined;
  starts.forEach((s, i) => {
    if (prevEnd !== undefined) assert.ok(s.monoNs > prevEnd, `child ${s.pid} (term ${s.term}) started while child ${prevPid} was running`);
    if (i > 0) assert.ok(s.term > starts[i - 1]!.term, `terms only grow: ${starts[i - 1]!.term} then ${s.term}`);
    const stop = log.find((l) => l.kind === 'stop' && l.pid === s.pid);
    prevEnd = stop?.monoNs ?? goneAt.get(s.pid);
    prevPid = s.pid;
    if (prevEnd === undefined && i < starts.length - 1) assert.fail(`child ${s.pid} has no known end but another child started after it`);
  });
}
