/**
 * The directed-handover scenario through the command line, reusable for every store: three real
 * `baton run --keep-running --app-version V` candidates on one lock, each running a child that
 * logs `start`/`stop` lines (CLOCK_MONOTONIC) to one shared file and takes its time to stop, as a
 * worker finishing a batch would. `baton handover --to` names each of the two others in turn:
 * every time it exits 0, the named candidate leads (per `baton status --json`) with a higher term,
 * and its command starts only after the old leader's command has logged its stop. `--to nobody`
 * exits 1 and changes nothing (same holder, same term); `--to` the leader exits 0 ("already").
 * Last, SIGTERM to the leader's `baton run`: a registered leader's graceful stop hands over to the
 * best live candidate (the higher app version), its command stopped first.
 *
 * The lease is long (nothing expires during the scenario): only the handovers move leadership.
 * Bounds are generous waits, never timing assertions.
 */
import assert from 'node:assert/strict';
import { BatonProcess, TempDir, cleanEnv, lines, readChildLog, runCli, waitFor, type LogLine } from './cli.js';

import { SLOW_CHILD } from './cli.js';

/** HandoverScenarioResult: the holders and terms seen after each handover. */
export interface HandoverScenarioResult {
  readonly holders: readonly string[];
  readonly terms: readonly number[];
}

interface Status {
  holder: string | null;
  term: number;
  candidates?: { identity: string; appVersion: string | null; live: boolean; leader: boolean }[];
  preferred?: Record<string, string | null>;
}

/** runHandoverScenario runs the scenario on `storeUrl` (a fresh lock name, so a shared server is fine). */
export async function runHandoverScenario(options: { storeUrl: string; name: string }): Promise<HandoverScenarioResult> {
  const label = options.name.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 40) || 'store';
  const lock = `handover-${label}-${process.pid}-${Date.now().toString(36)}`;
  const dir = new TempDir();
  const log = dir.join('children.log');
  const env = cleanEnv(dir.path, { CHILD_LOG: log, STOP_DELAY_MS: '500' });
  const store = ['--store', options.storeUrl, '--lock', lock];
  const timing = ['--lease-duration', '20s', '--renew-deadline', '15s', '--retry-period', '200ms'];
  const batons = new Map<string, BatonProcess>();
  const context = () =>
    `\nchild log:\n${readChildLog(log).map((l) => `${l.kind} ${l.term} ${l.identity}`).join('\n')}\n` + [...batons].map(([id, b]) => `--- ${id} stderr:\n${b.stderr}`).join('\n');
  const status = async (): Promise<Status> => {
    const r = await runCli(['status', ...store, '--json'], { env, timeoutMs: 30_000 });
    assert.equal(r.code, 0, `baton status: ${r.stderr}`);
    return JSON.parse(r.stdout) as Status;
  };
  const handover = (...args: string[]) => runCli(['handover', ...store, '--timeout', '30s', ...args], { env, timeoutMs: 60_000 });

  try {
    ['a', 'b', 'c'].forEach((suffix, i) => {
      const identity = `${label}-${suffix}`;
      const args = ['run', ...store, '--identity', identity, ...timing, '--keep-running', '--app-version', `1.${i}.0`, '--', process.execPath, '-e', SLOW_CHILD];
      batons.set(identity, new BatonProcess(args, { env }));
    });
    const starts = () => readChildLog(log).filter((l) => l.kind === 'start');
    const first = await waitFor('the first leader to start its child', () => starts()[0], 30_000);
    // All three registered and live: `baton status` lists them, the leader marked.
    const registered = await waitFor('three live candidates in baton status', async () => {
      const s = await status();
      return s.candidates?.filter((c) => c.live).length === 3 && s;
    }, 30_000, 200);
    assert.equal(registered.holder, first.identity);
    assert.deepEqual(registered.candidates!.filter((c) => c.leader).map((c) => c.identity), [first.identity]);
    assert.deepEqual(registered.candidates!.map((c) => c.appVersion).sort(), ['1.0.0', '1.1.0', '1.2.0']);
    assert.equal(registered.preferred?.newest, `${label}-c`, 'newest: the highest app version');
    const text = await runCli(['status', ...store], { env, timeoutMs: 30_000 });
    assert.match(text.stdout, /candidates: 3 live; started and last seen by each candidate's own clock/);
    assert.match(text.stdout, new RegExp(`\\* ${first.identity} on .*; version 1\\.\\d\\.0; started .*; last seen`));
    assert.match(text.stdout, new RegExp(`preferred: newest ${label}-c, oldest ${label}-[abc], priority`));

    const holders: string[] = [first.identity];
    const terms: number[] = [first.term];
    const others = [...batons.keys()].filter((id) => id !== first.identity);
    for (const target of others) {
      const from = holders.at(-1)!;
      const r = await handover('--to', target);
      assert.equal(r.code, 0, `handover to ${target}: ${r.stderr}${context()}`);
      assert.match(r.stderr, new RegExp(`handed over to ${target} \\(term \\d+`));
      const s = await status();
      assert.equal(s.holder, target, `${target} leads after the handover${context()}`);
      assert.ok(s.term > terms.at(-1)!, `the term grows: ${terms.at(-1)} → ${s.term}`);
      // Drain first: the old leader's command logged its stop before the new one's start.
      const started = await waitFor(`${target}'s command to start`, () => starts().find((l) => l.identity === target && l.term === s.term), 30_000);
      const stopped = readChildLog(log).find((l) => l.kind === 'stop' && l.identity === from && l.term === terms.at(-1));
      assert.ok(stopped, `${from}'s command logged its stop${context()}`);
      assert.ok(started.monoNs > stopped.monoNs, `${target}'s command started ${Number(stopped.monoNs - started.monoNs) / 1e6} ms before ${from}'s had stopped${context()}`);
      holders.push(target);
      terms.push(s.term);
    }

    // A name that is not a candidate: exit 1, one line saying why, nothing changes.
    const refused = await handover('--to', 'nobody');
    assert.equal(refused.code, 1, refused.stderr);
    assert.equal(lines(refused.stderr).length, 1, refused.stderr);
    assert.match(refused.stderr, /nobody is not a registered candidate/);
    const after = await status();
    assert.deepEqual([after.holder, after.term], [holders.at(-1), terms.at(-1)], 'leader and term unchanged');

    // The leader itself: already done.
    const already = await handover('--to', holders.at(-1)!);
    assert.equal(already.code, 0, already.stderr);
    assert.match(already.stderr, /already led by/);

    // A registered leader stopped gracefully (SIGTERM) hands over to the best live candidate —
    // here the higher app version of the two others — rather than releasing to a race.
    const leader = holders.at(-1)!;
    const versionOf = (id: string) => registered.candidates!.find((c) => c.identity === id)!.appVersion!;
    const [successor] = [...batons.keys()].filter((id) => id !== leader).sort((x, y) => versionOf(y).localeCompare(versionOf(x)));
    batons.get(leader)!.signal('SIGTERM');
    await batons.get(leader)!.waitForExit(30_000);
    const next = await waitFor(`${successor} to lead after ${leader}'s SIGTERM`, async () => {
      const st = await status();
      return st.holder !== leader && st.holder !== null && st;
    }, 30_000, 200);
    assert.equal(next.holder, successor, `the graceful stop handed over to ${successor}${context()}`);
    assert.ok(next.term > terms.at(-1)!);
    const nextStart = await waitFor(`${successor}'s command to start`, () => starts().find((l) => l.identity === successor && l.term === next.term), 30_000);
    const lastStop = readChildLog(log).find((l) => l.kind === 'stop' && l.identity === leader && l.term === terms.at(-1));
    assert.ok(lastStop && nextStart.monoNs > lastStop.monoNs, `${successor}'s command started before ${leader}'s had stopped${context()}`);
    holders.push(successor!);
    terms.push(next.term);

    // Never two commands at once: every start after the first follows a stop.
    assertOneAtATime(readChildLog(log), context);
    return { holders, terms };
  } finally {
    await Promise.all([...batons.values()].map((b) => b.kill()));
    dir.remove();
  }
}

/** assertOneAtATime checks that the log's commands never overlapped. */
function assertOneAtATime(entries: LogLine[], context: () => string): void {
  let running: LogLine | undefined;
  for (const l of [...entries].sort((x, y) => (x.monoNs < y.monoNs ? -1 : 1))) {
    if (l.kind === 'start') {
      assert.equal(running, undefined, `${l.identity} started while ${running?.identity} ran${context()}`);
      running = l;
    } else if (running && l.pid === running.pid) {
      running = undefined;
    }
  }
}
