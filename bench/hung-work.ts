/**
 * The long checks of issue 28 (leadership bound to the work's progress), run by hand — not CI:
 *
 *   node --import tsx bench/hung-work.ts [--load-minutes 10] [--pingpong-minutes 5]
 *        [--shards-pingpong-minutes 0] [--shards 4]
 *        [--progress-timeout 2s] [--instances 3] [--store sqlite:PATH] [--out FILE]
 *
 * 1. No false step-down: N `baton run --progress-timeout D --keep-running` instances whose
 *    children (test/fixtures/watchdog/child.py) send WATCHDOG=1 every D/10, on a machine loaded
 *    with 2 × cores busy loops for the whole phase. Every "is hung" line is a false step-down;
 *    the target is 0.
 * 2. Ping-pong: N instances whose children never report progress, for the phase. Leadership
 *    changes (child starts) are counted against the back-off's bound, N × maxHungTerms
 *    (src/core/hang-backoff.ts), and against what no back-off would give (about one per D).
 * 3. Shards ping-pong (only with --shards-pingpong-minutes M > 0): N `baton shards
 *    --progress-timeout D` members share --shards S shards, and every shard's child never reports
 *    progress. Each member backs off per shard (ShardGroup's exclusions), so each shard's
 *    ownerships (child starts) are counted against the same bound, N × maxHungTerms, per shard.
 *
 * Prints a Markdown report and writes it to --out (default bench/results/hung-work-<date>.md).
 * Needs the build (bin/baton.js) and python3.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseDuration } from '../src/core/duration.js';
import { hangBackoffMs, maxHungTerms } from '../src/core/hang-backoff.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BATON = join(ROOT, 'bin', 'baton.js');
const CHILD = join(ROOT, 'test', 'fixtures', 'watchdog', 'child.py');

const { values } = parseArgs({
  options: {
    'load-minutes': { type: 'string', default: '10' },
    'pingpong-minutes': { type: 'string', default: '5' },
    'shards-pingpong-minutes': { type: 'string', default: '0' },
    shards: { type: 'string', default: '4' },
    'progress-timeout': { type: 'string', default: '2s' },
    instances: { type: 'string', default: '3' },
    store: { type: 'string' },
    out: { type: 'string' },
  },
});
const loadMs = Number(values['load-minutes']) * 60_000;
const pingPongMs = Number(values['pingpong-minutes']) * 60_000;
const shardsPingPongMs = Number(values['shards-pingpong-minutes']) * 60_000;
const shardCount = Number(values.shards);
const progressMs = parseDuration(values['progress-timeout']!, '--progress-timeout');
const n = Number(values.instances);
const dir = mkdtempSync(join(tmpdir(), 'baton-hung-bench-'));
const store = values.store ?? `sqlite:${join(dir, 'bench.db')}`;

interface Phase {
  log: string;
  batons: { proc: ChildProcess; stderr: string }[];
}

function startFleet(lock: string, mode: 'notify' | 'none'): Phase {
  const log = join(dir, `${lock}.log`);
  const env = { ...process.env, HOME: dir, CHILD_LOG: log, CHILD_MODE: mode, CHILD_EVERY: String(progressMs / 10 / 1000) };
  const batons = Array.from({ length: n }, (_, i) => {
    const proc = spawn(process.execPath, [BATON, 'run', '--store', store, '--lock', lock, '--identity', `${lock}-${i}`,
      '--progress-timeout', `${progressMs}ms`, '--keep-running', '--', 'python3', CHILD], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    const b = { proc, stderr: '' };
    proc.stderr!.on('data', (d: Buffer) => (b.stderr += d.toString()));
    return b;
  });
  return { log, batons };
}

/** startShardFleet: N `baton shards` members; each shard's child logs to `<dir>/<group>/shard-<i>.log`. */
function startShardFleet(group: string): Phase & { logOf: (shard: number) => string } {
  const logs = join(dir, group);
  mkdirSync(logs);
  const env = { ...process.env, HOME: dir, LOGS: logs, CHILD_MODE: 'none' };
  const batons = Array.from({ length: n }, (_, i) => {
    const proc = spawn(process.execPath, [BATON, 'shards', '--store', store, '--group', group, '--shards', String(shardCount), '--identity', `${group}-${i}`,
      '--progress-timeout', `${progressMs}ms`, '--', 'sh', '-c', `CHILD_LOG="$LOGS/shard-$BATON_SHARD.log" exec python3 ${CHILD}`], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    const b = { proc, stderr: '' };
    proc.stderr!.on('data', (d: Buffer) => (b.stderr += d.toString()));
    return b;
  });
  return { log: join(logs, 'shard-0.log'), batons, logOf: (shard) => join(logs, `shard-${shard}.log`) };
}

async function stopFleet(p: Phase): Promise<void> {
  await Promise.all(p.batons.map((b) => new Promise<void>((resolve) => {
    if (b.proc.exitCode !== null || b.proc.signalCode !== null) return resolve();
    b.proc.once('exit', () => resolve());
    b.proc.kill('SIGTERM');
    setTimeout(() => b.proc.kill('SIGKILL'), 20_000).unref();
  })));
}

const starts = (log: string) => {
  try {
    return readFileSync(log, 'utf8').split('\n').filter((l) => l.startsWith('start ')).length;
  } catch {
    return 0;
  }
};
const hungLines = (p: Phase) => p.batons.reduce((sum, b) => sum + (b.stderr.match(/ is hung: /g)?.length ?? 0), 0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const report: string[] = [];
const startedAt = new Date().toISOString();
report.push(`# Hung work (issue 28): ${startedAt}`, '', `Machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, load average at start ${loadavg().map((x) => x.toFixed(2)).join(' ')}. Store \`${store.startsWith('sqlite:') ? 'sqlite (a temporary file)' : store}\`, ${n} instances${shardsPingPongMs > 0 ? ` (${shardCount} shards in phase 3)` : ''}, progress timeout ${progressMs} ms, baton's default lease timing.`, '');

// 1. No false step-down under load.
if (loadMs > 0) {
  const busy = Array.from({ length: 2 * cpus().length }, () => spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
  const fleet = startFleet('loaded', 'notify');
  const loads: number[] = [];
  const sampler = setInterval(() => loads.push(loadavg()[0]!), 10_000);
  await sleep(loadMs);
  clearInterval(sampler);
  const falseStepDowns = hungLines(fleet);
  const terms = starts(fleet.log);
  await stopFleet(fleet);
  for (const b of busy) b.kill('SIGKILL');
  report.push('## 1. No false step-down under load', '',
    `${(loadMs / 60_000).toFixed(1)} min with ${busy.length} busy loops (2 × cores), heartbeats every ${progressMs / 10} ms: ` +
    `**${falseStepDowns} step-downs for hung work** (target 0), ${terms} term${terms === 1 ? '' : 's'} started; ` +
    `1-minute load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}.`, '');
}

// 2. Ping-pong: every child hangs.
if (pingPongMs > 0) {
  const fleet = startFleet('pingpong', 'none');
  const samples: string[] = [];
  for (let t = 0; t < pingPongMs; t += 60_000) {
    await sleep(Math.min(60_000, pingPongMs - t));
    samples.push(`${((t + Math.min(60_000, pingPongMs - t)) / 60_000).toFixed(0)} min: ${starts(fleet.log)}`);
  }
  const changes = starts(fleet.log);
  await stopFleet(fleet);
  const bound = n * maxHungTerms(pingPongMs, progressMs, progressMs);
  const noBackoff = Math.floor(pingPongMs / progressMs);
  report.push('## 2. Ping-pong: every child hangs', '',
    `${(pingPongMs / 60_000).toFixed(1)} min, no child ever sends a heartbeat: **${changes} leaderships** ` +
    `(bound from the back-off: ${n} × maxHungTerms = ${bound}; with no back-off about ${noBackoff}). ` +
    `Cumulative by minute: ${samples.join(', ')}. Back-offs: ${[1, 2, 3, 4, 5, 6].map((k) => `${hangBackoffMs(progressMs, k) / 1000}s`).join(', ')}, … up to 10 min.`,
    '', `Result: ${changes <= bound ? 'within the bound' : 'OVER THE BOUND'}.`, '');
}

// 3. Shards ping-pong: every shard's child hangs, on every member.
if (shardsPingPongMs > 0) {
  const fleet = startShardFleet('shards-pingpong');
  const shardList = Array.from({ length: shardCount }, (_, s) => s);
  const samples: string[] = [];
  for (let t = 0; t < shardsPingPongMs; t += 60_000) {
    await sleep(Math.min(60_000, shardsPingPongMs - t));
    const total = shardList.reduce((sum, s) => sum + starts(fleet.logOf(s)), 0);
    samples.push(`${((t + Math.min(60_000, shardsPingPongMs - t)) / 60_000).toFixed(0)} min: ${total}`);
  }
  const perShard = shardList.map((s) => starts(fleet.logOf(s)));
  const given = (re: RegExp) => fleet.batons.reduce((sum, b) => sum + (b.stderr.match(re)?.length ?? 0), 0);
  const hung = given(/ is hung: /g);
  const rebalanced = given(/: given up \(rebalanced\)/g);
  // Per shard: its terms that ended hung, and those the assignment moved (an exchange for balance).
  const hungOf = shardList.map((s) => given(new RegExp(`shard ${s} of "[^"]*" \\(term \\d+\\) is hung: `, 'g')));
  const rebalancedOf = shardList.map((s) => given(new RegExp(`shard ${s}: given up \\(rebalanced\\)`, 'g')));
  await stopFleet(fleet);
  const bound = n * maxHungTerms(shardsPingPongMs, progressMs, progressMs);
  const noBackoff = Math.floor(shardsPingPongMs / progressMs);
  const over = perShard.filter((c) => c > bound).length;
  report.push('## 3. Shards ping-pong: every shard\'s child hangs on every member', '',
    `${(shardsPingPongMs / 60_000).toFixed(1)} min, ${n} \`baton shards\` members, ${shardCount} shards, no child ever sends a heartbeat. ` +
    `Ownerships (child starts) per shard, against the back-off's bound per shard (${n} × maxHungTerms = ${bound}; with no back-off about ${noBackoff}):`, '',
    '| shard | ownerships | bound | ended hung | moved by the assignment |', '|---|---|---|---|---|',
    ...perShard.map((c, s) => `| ${s} | ${c} | ${bound} | ${hungOf[s]} | ${rebalancedOf[s]} |`), '',
    `All shards, cumulative by minute: ${samples.join(', ')}. Lines on the members' stderr: ${hung} "is hung", ${rebalanced} "given up (rebalanced)" (a shard moved to keep the balance, not for a hang).`,
    '', `Result: ${over === 0 ? 'every shard within the bound' : `${over} shard${over === 1 ? '' : 's'} OVER THE BOUND`}.`, '');
}

report.push(`Finished ${new Date().toISOString()}.`, '');
const text = report.join('\n');
process.stdout.write(text);
const out = values.out ?? join(ROOT, 'bench', 'results', `hung-work-${startedAt.slice(0, 10)}.md`);
writeFileSync(out, text);
rmSync(dir, { recursive: true, force: true });
