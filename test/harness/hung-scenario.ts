/**
 * The hung-work scenario (issue 28), reusable for every store: three real `baton run
 * --progress-timeout --keep-running` processes campaign for one lock, each running
 * test/fixtures/watchdog/child.py, which reports progress the systemd way (WATCHDOG=1 on
 * NOTIFY_SOCKET) or by touching BATON_HEARTBEAT_FILE. The scenario SIGSTOPs only the leader's
 * child — its baton keeps renewing — and asserts the facts and their order, not tight timings:
 *
 * 1. the stopped child is stopped (its `stop` line, written once SIGCONT let it run its SIGTERM
 *    handler, or its death by SIGKILL) before another child starts;
 * 2. another instance's child starts, within progress timeout + lease + a generous slack;
 * 3. the stopped child is dead; the old leader's baton is still running (backing off) and said
 *    once why; the record says why the last leader stepped down.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { BatonProcess, TempDir, cleanEnv, delay, lines, monoNs, pidAlive, readChildLog, runCli, waitFor } from './cli.js';

/** CHILD_PY is the systemd-style child (a python3 script). */
export const CHILD_PY = fileURLToPath(new URL('../fixtures/watchdog/child.py', import.meta.url));

/** HUNG_TIMING: short timings, so one run takes seconds; the progress timeout is 2 s. */
export const HUNG_TIMING = { leaseMs: 2000, renewDeadlineMs: 1500, retryMs: 250, progressMs: 2000 } as const;

/** HungResult: SIGSTOP of the leader's child → the next child's start line (ms), and the two leaders. */
export interface HungResult {
  takeoverMs: number;
  first: string;
  second: string;
}

/** runHungScenario runs the scenario above on `storeUrl` with heartbeats of kind `mode`. */
export async function runHungScenario(options: { storeUrl: string; name: string; mode: 'notify' | 'file' }): Promise<HungResult> {
  const t = HUNG_TIMING;
  const lock = `hung-${options.name}-${options.mode}-${process.pid}-${Date.now().toString(36)}`;
  const dir = new TempDir();
  const log = dir.join('children.log');
  const env = cleanEnv(dir.path, { CHILD_LOG: log, CHILD_MODE: options.mode, CHILD_EVERY: String(t.progressMs / 10 / 1000) });
  const batons = new Map<string, BatonProcess>();
  const context = () => `\nchild log:\n${readChildLog(log).map((l) => `${l.kind} ${l.term} ${l.pid} ${l.identity}`).join('\n')}\n` +
    [...batons].map(([id, b]) => `--- ${id} stderr:\n${b.stderr}`).join('\n');
  let stoppedPid: number | undefined;
  try {
    for (const suffix of ['a', 'b', 'c']) {
      const identity = `${options.name}-${options.mode}-${suffix}`;
      batons.set(identity, new BatonProcess(['run', '--store', options.storeUrl, '--lock', lock, '--identity', identity,
        '--lease-duration', `${t.leaseMs}ms`, '--renew-deadline', `${t.renewDeadlineMs}ms`, '--retry-period', `${t.retryMs}ms`,
        '--progress-timeout', `${t.progressMs}ms`, '--keep-running', '--', 'python3', CHILD_PY], { env }));
    }
    const starts = () => readChildLog(log).filter((l) => l.kind === 'start');
    const first = await waitFor('the first leader to start its child', () => starts()[0], 30_000);
    // Heartbeats keep it leading for longer than the progress timeout: no false step-down.
    await delay(t.progressMs * 1.5);
    assert.equal(starts().length, 1, `the healthy leader keeps leading past the progress timeout${context()}`);

    stoppedPid = first.pid;
    const stoppedAt = monoNs();
    process.kill(first.pid, 'SIGSTOP');
    const bound = t.progressMs + t.leaseMs + 15_000;
    const second = await waitFor('another instance to start its child', () => starts().find((l) => l.identity !== first.identity), bound, 20);
    const takeoverMs = Number(second.monoNs - stoppedAt) / 1e6;

    // 1. The hung child was stopped before the next one started (the `stop` line comes first),
    //    or was killed outright; either way it is dead now.
    const all = readChildLog(log);
    const stopLine = all.findIndex((l) => l.kind === 'stop' && l.pid === first.pid);
    const secondLine = all.findIndex((l) => l.kind === 'start' && l.pid === second.pid);
    // (Without a `stop` line it was SIGKILLed before its handler ran: there is no line to order.)
    if (stopLine >= 0) assert.ok(stopLine < secondLine, `the hung child stopped before the next started${context()}`);
    await waitFor('the hung child to be gone', () => !pidAlive(first.pid), 5_000);
    assert.ok(second.term > first.term, `terms grow${context()}`);

    // 2. The old leader's baton said why, once, and backs off rather than exiting.
    const old = batons.get(first.identity)!;
    await waitFor('the old leader to say it backs off', () => /campaigning again in/.test(old.stderr), 5_000);
    assert.equal(old.stderr.match(/is hung: no heartbeat within the progress timeout/g)?.length, 1, `one line says why${context()}`);
    assert.equal(old.done, false, `--keep-running: the old leader's baton keeps going${context()}`);

    // 3. The record says why the last leader stepped down, while the new one holds it.
    const status = await runCli(['status', '--store', options.storeUrl, '--lock', lock, '--json'], { env });
    assert.equal(status.code, 0, status.stderr);
    const view = JSON.parse(status.stdout) as { holder: string; lastStepDown: { holder: string; term: number; reason: string; note: string } };
    assert.equal(view.holder, second.identity, status.stdout);
    assert.equal(view.lastStepDown?.holder, first.identity);
    assert.equal(view.lastStepDown.term, first.term);
    assert.equal(view.lastStepDown.reason, 'hung');
    assert.match(view.lastStepDown.note, /no heartbeat/);

    // Never two children at once, over the whole run.
    let running = 0;
    for (const l of readChildLog(log)) {
      // A child SIGKILLed before its SIGTERM handler ran has no `stop` line: count it out at once.
      const killed = l.kind === 'start' && l.pid === first.pid && stopLine < 0;
      running += l.kind === 'start' && !killed ? 1 : l.kind === 'stop' ? -1 : 0;
      if (l.kind === 'start') assert.equal(running, 1, `two children ran at once${context()}`);
    }
    return { takeoverMs, first: first.identity, second: second.identity };
  } finally {
    if (stoppedPid !== undefined && pidAlive(stoppedPid)) process.kill(stoppedPid, 'SIGKILL');
    for (const b of batons.values()) b.signal('SIGTERM');
    await Promise.all([...batons.values()].map((b) => b.waitForExit(10_000).catch(() => b.kill())));
    dir.remove();
  }
}

/**
 * assertBadWatchdogFlags runs `baton <command…> FLAGS -- true` for each bad use of the hung-work
 * flags (--progress-timeout, --health-*) and checks the answer: one line naming the flag, exit 64
 * (a flag without the one it needs) or 78 (a bad value), and nothing made in TMPDIR or beside the
 * store — the same rules for `baton run` and `baton shards`.
 */
export async function assertBadWatchdogFlags(command: (sqlitePath: string) => string[]): Promise<void> {
  const home = new TempDir();
  const tmp = home.join('tmp');
  mkdirSync(tmp);
  const env = cleanEnv(home.path, { TMPDIR: tmp });
  const cases: [string[], number, RegExp][] = [
    [['--progress-timeout', 'soon'], 78, /--progress-timeout/],
    [['--progress-timeout', '10ms'], 78, /--progress-timeout: "10ms" must be between 100ms and 24h/],
    [['--health-interval', '1s'], 64, /--health-interval needs --health-cmd/],
    [['--health-failures', '2'], 64, /--health-failures needs --health-cmd/],
    [['--health-cmd', 'true', '--health-failures', '0'], 78, /--health-failures: "0" is not a whole number/],
    [['--health-cmd', ' '], 78, /--health-cmd: the command is empty/],
  ];
  try {
    for (const [flags, code, message] of cases) {
      const r = await runCli([...command(home.sqlite()), ...flags, '--', 'true'], { env });
      assert.equal(r.code, code, `${flags.join(' ')}: ${r.stderr}`);
      assert.equal(lines(r.stderr).length, 1, r.stderr);
      assert.match(r.stderr, message);
    }
    assert.deepEqual(readdirSync(tmp), [], 'nothing made in TMPDIR');
    assert.deepEqual(readdirSync(home.path).filter((n) => n.startsWith('baton')), [], 'no store file made');
  } finally {
    home.remove();
  }
}
