/**
 * The hung-shard scenario (issue 28), reusable for every store: three real `baton shards
 * --progress-timeout` members share 6 shards; each shard's child is
 * test/fixtures/watchdog/child.py, which sends WATCHDOG=1 to its own NOTIFY_SOCKET. The scenario
 * SIGSTOPs the child of one shard only — its baton keeps renewing every lease — and asserts the
 * facts, not tight timings:
 *
 * 1. that shard's child is started by another member within progress timeout + lease + a
 *    generous slack, and the stopped child is dead;
 * 2. the member's other shard kept its child (same pid, no restart);
 * 3. the shard is not run by that member again during its back-off (nor for a while after: a
 *    recomputation never hands it back);
 * 4. one line said why (shard, term, timeout); the ledger keeps why under the shard's lock.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { BatonProcess, TempDir, cleanEnv, delay, pidAlive, readChildLog, runCli, waitFor, type LogLine } from '../harness/cli.js';

const CHILD_PY = fileURLToPath(new URL('../fixtures/watchdog/child.py', import.meta.url));
// The progress timeout is 4 s, not baton run's 2 s: six children (each under its own watchdog
// process, with its own python3 socket helper) start at once, and on a 2-core machine loaded to
// a load average of 12 their first heartbeat took longer than 2 s (every shard "hung" at start).
const T = { leaseMs: 2000, renewDeadlineMs: 1500, retryMs: 250, progressMs: 4000 } as const;
const SHARDS = 6;

/** runHungShardScenario runs the scenario above on `storeUrl`. */
export async function runHungShardScenario(options: { storeUrl: string; name: string }): Promise<{ takeoverMs: number }> {
  const group = `hung-${options.name}-${process.pid}-${Date.now().toString(36)}`;
  const dir = new TempDir();
  const env = cleanEnv(dir.path, { CHILD_MODE: 'notify', CHILD_EVERY: String(T.progressMs / 10 / 1000), LOGS: dir.path });
  const batons = new Map<string, BatonProcess>();
  const logOf = (shard: number): LogLine[] => readChildLog(dir.join(`shard-${shard}.log`));
  /** shard → its running child (the last start line, if no stop line followed and it lives). */
  const running = () => {
    const out = new Map<number, LogLine>();
    for (let s = 0; s < SHARDS; s++) {
      const last = logOf(s).at(-1);
      if (last?.kind === 'start' && pidAlive(last.pid)) out.set(s, last);
    }
    return out;
  };
  const context = () =>
    '\n' + Array.from({ length: SHARDS }, (_, s) => `shard ${s}: ${logOf(s).map((l) => `${l.kind} t${l.term} ${l.pid} ${l.identity}`).join(' | ')}`).join('\n') +
    '\n' + [...batons].map(([id, b]) => `--- ${id} stderr:\n${b.stderr}`).join('\n');
  let stoppedPid: number | undefined;
  try {
    for (const identity of ['a', 'b', 'c']) {
      // `exec` keeps the pid, so WATCHDOG_PID (the command's pid) is python's own, as child.py checks.
      batons.set(identity, new BatonProcess(['shards', '--store', options.storeUrl, '--group', group, '--shards', String(SHARDS), '--identity', identity,
        '--lease-duration', `${T.leaseMs}ms`, '--renew-deadline', `${T.renewDeadlineMs}ms`, '--retry-period', `${T.retryMs}ms`,
        '--progress-timeout', `${T.progressMs}ms`, '--', 'sh', '-c', `CHILD_LOG="$LOGS/shard-$BATON_SHARD.log" exec python3 ${CHILD_PY}`], { env }));
    }
    const perMember = () => {
      const c = new Map<string, number>();
      for (const l of running().values()) c.set(l.identity, (c.get(l.identity) ?? 0) + 1);
      return [...c.values()].sort().join(',');
    };
    await waitFor('every shard running, 2 per member', () => running().size === SHARDS && perMember() === '2,2,2', 40_000, 50).catch((err: Error) => {
      throw new Error(`${err.message}${context()}`);
    });
    // Heartbeats keep every child going past the progress timeout: no false step-down. (Counted
    // from the settled assignment: a member that joined first may have started shards that were
    // then rebalanced to the others before it settled.)
    const settled = running();
    const startsAtSettle = Array.from({ length: SHARDS }, (_, s) => logOf(s).filter((l) => l.kind === 'start').length);
    await delay(T.progressMs * 1.5);
    for (let s = 0; s < SHARDS; s++) {
      assert.equal(logOf(s).filter((l) => l.kind === 'start').length, startsAtSettle[s], `shard ${s} started another child after the assignment settled${context()}`);
      assert.equal(running().get(s)?.pid, settled.get(s)?.pid, `shard ${s} kept its child${context()}`);
    }

    const before = running();
    const victim = [...before].find(([, l]) => l.identity === 'a')!;
    const [hungShard, hungChild] = victim;
    const [keptShard, keptChild] = [...before].find(([s, l]) => l.identity === 'a' && s !== hungShard)!;
    stoppedPid = hungChild.pid;
    const stoppedAt = performance.now();
    process.kill(hungChild.pid, 'SIGSTOP');

    // 1. Another member runs the hung shard, and the stopped child is dead.
    const bound = T.progressMs + T.leaseMs + 15_000;
    const next = await waitFor('another member to start the hung shard', () => logOf(hungShard).find((l) => l.kind === 'start' && l.identity !== 'a'), bound, 20);
    const takeoverMs = performance.now() - stoppedAt;
    await waitFor('the stopped child to be gone', () => !pidAlive(hungChild.pid), 5_000);
    assert.ok(next.term > hungChild.term, `the term grew${context()}`);

    // 2. a's other shard kept its child.
    assert.equal(running().get(keptShard)?.pid, keptChild.pid, `a's other shard kept its child${context()}`);
    assert.equal(logOf(keptShard).filter((l) => l.kind === 'start').length, 1, `a's other shard did not restart${context()}`);

    // 3. Not handed back to a: through the back-off (4 s, the progress timeout) and after it.
    const watchUntil = performance.now() + 2 * T.progressMs + 2000;
    while (performance.now() < watchUntil) {
      const again = logOf(hungShard).filter((l) => l.kind === 'start' && l.identity === 'a');
      assert.equal(again.length, 1, `the hung shard was handed back to a${context()}`);
      await delay(100);
    }
    assert.equal(running().get(keptShard)?.pid, keptChild.pid, `a's other shard still has its child${context()}`);
    await waitFor('every shard running, 2 per member, again', () => running().size === SHARDS && perMember() === '2,2,2', 20_000, 50);

    // 4. One line said why, with shard, term and timeout; the ledger keeps why.
    const a = batons.get('a')!;
    const why = a.stderr.match(new RegExp(`shard ${hungShard} of "${group}" \\(term ${hungChild.term}\\) is hung: no heartbeat within the progress timeout \\(4s\\)`, 'g'));
    assert.equal(why?.length, 1, `one line says why${context()}`);
    assert.match(a.stderr, new RegExp(`shard ${hungShard}: released \\(hung\\); not taken again here for 4s`));
    const status = await runCli(['status', '--store', options.storeUrl, '--lock', `${group}/shard/${hungShard}`, '--json'], { env });
    assert.equal(status.code, 0, status.stderr);
    const last = (JSON.parse(status.stdout) as { lastStepDown?: { holder: string; term: number; reason: string; note?: string; backoffMs?: number } }).lastStepDown;
    assert.equal(last?.holder, 'a', status.stdout);
    assert.equal(last?.term, hungChild.term);
    assert.equal(last?.reason, 'hung');
    assert.match(last?.note ?? '', /no heartbeat within the progress timeout/);
    assert.equal(last?.backoffMs, T.progressMs);
    for (const b of batons.values()) assert.equal(b.done, false, `every member keeps going${context()}`);
    return { takeoverMs };
  } finally {
    if (stoppedPid !== undefined && pidAlive(stoppedPid)) {
      try {
        process.kill(stoppedPid, 'SIGCONT');
        process.kill(stoppedPid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await Promise.all([...batons.values()].map((b) => b.kill()));
    dir.remove();
  }
}
