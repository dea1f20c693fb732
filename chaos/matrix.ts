/**
 * chaos/matrix.ts — `npm run chaos:matrix -- --stores LIST --faults LIST --trials N --seed S
 * [--lease D] [--json FILE] [--md FILE]`: the failover matrix (issue 31). For every store × fault
 * cell it runs one chaos run (`chaos/run.ts --net netns --trials N --at-leader`, one at a time),
 * each fault a trial aimed at the leader, and reports per cell:
 *
 * - unavailability p50 / p99 / max: from the fault (a store fault: from its heal) to the first
 *   write the fenced register accepted from the next leader (chaos/checker.ts, FaultRecord);
 * - the cell's bound: lease + retry period (a polling store: its longest poll wait) + store RTT
 *   p99 — the RTT of renewals outside faults, or, for a slow or lossy link, of every renewal;
 * - trials over the bound; isLeader() overlap (must be 0); stale writes accepted (must be 0),
 *   and those refused by fencing; faults without effect (must be 0);
 * - where the time went (medians): fault → acquiring write sent, the acquiring call, elected →
 *   first accepted write — a slow elector (timers, CPU) shows in the first, a slow store in the second.
 *
 * Markdown to stdout (and --md), everything to --json, with the machine (`nproc`, `uptime`
 * before and after) and the one command that reproduces it. Exit 0 when every cell kept safety
 * (no overlap, no stale write accepted, no term out of order or early handover) and every fault
 * bit; trials over the bound are reported, not failed, since some have a mechanism (see
 * docs/RELIABILITY.md).
 */
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { UsageError } from '../src/core/errors.js';
import { parseDuration } from '../src/core/duration.js';
import type { ChaosResult } from './checker.js';
import { percentile } from './intervals.js';
import { NETNS_KINDS } from './options.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** MATRIX_FAULTS maps a matrix column to the chaos flags that make each trial that fault. */
export const MATRIX_FAULTS: Readonly<Record<string, readonly string[]>> = Object.freeze({
  kill: ['--faults', 'kill'],
  pause: ['--faults', 'pause'],
  stall: ['--faults', 'stall'],
  'kill-under-load': ['--faults', 'load'],
  'store-restart': ['--faults', 'store', '--store-faults', 'restart'],
  'store-freeze': ['--faults', 'store', '--store-faults', 'freeze'],
  'partition-two-way': ['--faults', 'partition', '--partition', 'two-way'],
  'partition-leader-to-store': ['--faults', 'partition', '--partition', 'leader-to-store'],
  'partition-store-to-leader': ['--faults', 'partition', '--partition', 'store-to-leader'],
  'partition-isolate': ['--faults', 'partition', '--partition', 'isolate'],
  'delay-50ms': ['--faults', 'link', '--link', 'delay-50ms'],
  'delay-200ms': ['--faults', 'link', '--link', 'delay-200ms'],
  'loss-5pct': ['--faults', 'link', '--link', 'loss-5pct'],
  'loss-30pct': ['--faults', 'link', '--link', 'loss-30pct'],
});

/** Cell is one store × fault of the matrix. */
export interface Cell {
  store: string;
  fault: string;
  trials: number;
  unavailableMs: { p50: number; p99: number; max: number };
  boundMs: number;
  overBound: number;
  leaseOverlapMs: number;
  acceptedStaleWrites: number;
  rejectedStaleWrites: number;
  /** Terms out of order and handovers begun before the old leader stopped (must be 0). */
  safetyViolations: number;
  faultsWithoutEffect: string[];
  /** Medians of where the time went (trials that elected a new leader). */
  parts: { toAcquireMs: number; acquireMs: number; toWriteMs: number; newLeaders: number };
  command: string;
  error?: string;
}

/** cellFrom reads one chaos run's result as a matrix cell. */
export function cellFrom(store: string, fault: string, r: ChaosResult): Cell {
  const u = r.faultLog.map((f) => f.unavailableMs ?? 0);
  const bound = fault.startsWith('delay') || fault.startsWith('loss') ? round1(r.timing.leaseDurationMs + (r.timing.pollMs ?? r.timing.retryPeriodMs) + (r.timing.predecessorWaitMs ?? 0) + r.rttAllMs.p99) : r.boundMs;
  const next = r.faultLog.flatMap((f) => (f.next ? [f.next] : []));
  const med = (xs: number[]) => round1(percentile(xs, 50));
  return {
    store,
    fault,
    trials: r.faultLog.length,
    unavailableMs: { p50: med(u), p99: round1(percentile(u, 99)), max: round1(Math.max(0, ...u)) },
    boundMs: bound,
    overBound: u.filter((x) => x > bound).length,
    leaseOverlapMs: r.leaseOverlapMs,
    acceptedStaleWrites: r.acceptedStaleWrites,
    rejectedStaleWrites: r.rejectedStaleWrites,
    safetyViolations: r.termViolations.length + r.handoversTooEarly.length,
    faultsWithoutEffect: r.faultsNotSeen,
    parts: { toAcquireMs: med(next.map((n) => n.toAcquireMs)), acquireMs: med(next.map((n) => n.acquireMs)), toWriteMs: med(next.map((n) => n.toWriteMs)), newLeaders: next.length },
    command: r.command,
  };
}

interface MatrixOptions {
  stores: string[];
  faults: string[];
  trials: number;
  seed: number;
  lease: string;
  json?: string;
  md?: string;
}

function parseMatrixArgs(argv: string[]): MatrixOptions {
  const o = new Command('chaos:matrix')
    .option('--stores <list>', `stores (${NETNS_KINDS.join(', ')})`, NETNS_KINDS.join(','))
    .option('--faults <list>', `fault columns (${Object.keys(MATRIX_FAULTS).join(', ')})`, Object.keys(MATRIX_FAULTS).join(','))
    .option('--trials <n>', 'trials per cell', '3')
    .option('--seed <n>', 'seed of every cell\'s fault schedule', '31')
    .option('--lease <d>', 'lease duration (renew deadline 60 %, retry 25 %)', '2s')
    .option('--json <file>', 'write every cell as JSON')
    .option('--md <file>', 'write the Markdown table')
    .exitOverride()
    .allowExcessArguments(false)
    .parse(argv, { from: 'user' })
    .opts<Record<string, string>>();
  const list = (s: string) => s.split(',').map((w) => w.trim()).filter(Boolean);
  const stores = list(o.stores!);
  for (const s of stores) if (!NETNS_KINDS.includes(s)) throw new UsageError(`chaos:matrix: --stores: "${s}" cannot run on its own host yet (${NETNS_KINDS.join(', ')})`);
  const faults = list(o.faults!);
  for (const f of faults) if (!MATRIX_FAULTS[f]) throw new UsageError(`chaos:matrix: --faults: "${f}" is not a matrix fault (${Object.keys(MATRIX_FAULTS).join(', ')})`);
  const trials = Number(o.trials);
  if (!Number.isInteger(trials) || trials < 1) throw new UsageError(`chaos:matrix: --trials must be a whole number ≥ 1, got "${o.trials}"`);
  const seed = Number(o.seed);
  if (!Number.isInteger(seed) || seed < 0) throw new UsageError(`chaos:matrix: --seed must be a whole number, got "${o.seed}"`);
  parseDuration(o.lease!, '--lease');
  return { stores, faults, trials, seed, lease: o.lease!, json: o.json, md: o.md };
}

/** runCell runs one chaos run for a cell and reads its result. */
async function runCell(store: string, fault: string, o: MatrixOptions, dir: string): Promise<Cell> {
  const json = join(dir, `${store}-${fault}.json`);
  const args = ['--import', 'tsx', 'chaos/run.ts', '--store', store, '--net', 'netns', '--trials', String(o.trials), '--at-leader', '--seed', String(o.seed), '--lease', o.lease, ...MATRIX_FAULTS[fault]!, '--json', json];
  let stderr = '';
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-4000)));
    // A cell that hangs must not hold the matrix: trials × (settle + hold + failover) is far below this.
    const timer = setTimeout(() => child.kill('SIGTERM'), 120_000 + o.trials * 60_000);
    child.once('exit', (c) => (clearTimeout(timer), resolve(c)));
  });
  try {
    return cellFrom(store, fault, JSON.parse(readFileSync(json, 'utf8')) as ChaosResult);
  } catch {
    const empty = { p50: NaN, p99: NaN, max: NaN };
    return { store, fault, trials: 0, unavailableMs: empty, boundMs: NaN, overBound: 0, leaseOverlapMs: 0, acceptedStaleWrites: 0, rejectedStaleWrites: 0, safetyViolations: 0, faultsWithoutEffect: [], parts: { toAcquireMs: NaN, acquireMs: NaN, toWriteMs: NaN, newLeaders: 0 }, command: `node ${args.join(' ')}`, error: `exit ${code}: ${stderr.trim().split('\n').slice(-3).join(' / ')}` };
  }
}

/** cellOk: safety kept and every fault bit (trials over the bound are reported, not failed). */
export const cellOk = (c: Cell) => !c.error && c.leaseOverlapMs === 0 && c.acceptedStaleWrites === 0 && c.safetyViolations === 0 && c.faultsWithoutEffect.length === 0;

/** renderMatrix renders the cells as one Markdown table. */
export function renderMatrix(cells: Cell[], head: { machine: string; command: string }): string {
  const f = (x: number) => (Number.isFinite(x) ? String(Math.round(x)) : '–');
  const lines = [
    head.machine,
    '',
    `Reproduce: \`${head.command}\``,
    '',
    '| store | fault | trials | unavailable p50 / p99 / max (ms) | bound (ms) | over bound | isLeader() overlap | stale accepted (refused) | faults without effect | to acquire / acquire / to write, medians (ms) |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const c of cells) {
    if (c.error) {
      lines.push(`| ${c.store} | ${c.fault} | – | **did not run**: ${c.error.replace(/\|/g, '/')} | | | | | | |`);
      continue;
    }
    const u = c.unavailableMs;
    lines.push(
      `| ${c.store} | ${c.fault} | ${c.trials} | ${f(u.p50)} / ${f(u.p99)} / ${f(u.max)} | ${f(c.boundMs)} | ${c.overBound ? `**${c.overBound}**` : 0} | ${c.leaseOverlapMs ? `**${c.leaseOverlapMs} ms**` : '0'} | ${c.acceptedStaleWrites ? `**${c.acceptedStaleWrites}**` : 0} (${c.rejectedStaleWrites}) | ${c.faultsWithoutEffect.length ? `**${c.faultsWithoutEffect.length}**` : 0} | ${c.parts.newLeaders ? `${f(c.parts.toAcquireMs)} / ${f(c.parts.acquireMs)} / ${f(c.parts.toWriteMs)}` : 'no new leader'} |`,
    );
  }
  return lines.join('\n') + '\n';
}

function machine(): string {
  const uptime = execFileSync('uptime', { encoding: 'utf8' }).trim();
  return `${availableParallelism()} cores (nproc), ${uptime.slice(uptime.indexOf('load average')).trim()}`;
}

async function main(): Promise<number> {
  let o: MatrixOptions;
  try {
    o = parseMatrixArgs(process.argv.slice(2));
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'commander.helpDisplayed') return 0;
    process.stderr.write(`${(err as Error).message}\n`);
    return 64;
  }
  const command = `npm run chaos:matrix -- --stores ${o.stores.join(',')} --faults ${o.faults.join(',')} --trials ${o.trials} --seed ${o.seed} --lease ${o.lease}`;
  const before = machine();
  const started = new Date().toISOString();
  const dir = mkdtempSync(join(tmpdir(), 'baton-matrix-'));
  const cells: Cell[] = [];
  try {
    for (const store of o.stores) {
      for (const fault of o.faults) {
        process.stderr.write(`chaos:matrix: ${store} × ${fault}\n`);
        const cell = await runCell(store, fault, o, dir);
        process.stderr.write(`chaos:matrix: ${store} × ${fault}: ${cell.error ?? `max ${cell.unavailableMs.max} ms, bound ${cell.boundMs} ms`}\n`);
        cells.push(cell);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const head = { machine: `Machine: ${before} at the start (${started}); ${machine()} at the end.`, command };
  const md = renderMatrix(cells, head);
  process.stdout.write(md);
  if (o.md) writeFileSync(o.md, md);
  if (o.json) writeFileSync(o.json, JSON.stringify({ ...head, started, seed: o.seed, trials: o.trials, lease: o.lease, cells }, null, 2) + '\n');
  return cells.every(cellOk) ? 0 : 1;
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}

// Run as a command, not when imported (the CI grid test imports cellFrom and renderMatrix).
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then((code) => process.exit(code));
}
