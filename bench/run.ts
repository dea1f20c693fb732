/**
 * `npm run bench [-- --quick] [--only=…] [--stores=…] [--out=DIR]` — baton against the
 * libraries people would otherwise use, on the same servers in the same run.
 *
 * Starts every store's server from infra/servers/ (free loopback ports, temporary
 * data), runs every measurement (see plan.ts for the sizes), then writes latest.json, latest.md
 * and handover.svg to bench/results/ (a full run) or bench/results/scratch/ (anything else).
 * A measurement that fails is reported and the run goes on; the exit code is then 1.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fsyncMs, machineRecord } from './machine.js';
import { MEASUREMENTS, parsePlan, UsageError, type BenchContext, type MeasurementName, type StoreUnderTest } from './plan.js';
import { Results } from './results.js';
import { isRegistered, STORE_KINDS } from './stores.js';
import { writeOutputs } from './outputs.js';
import { measureRtt } from './measure/rtt.js';
import { measureHandover } from './measure/handover.js';
import { measureDirectedHandover } from './measure/directed.js';
import { measureFailover } from './measure/failover.js';
import { measureIdle } from './measure/idle.js';
import { measureHerd } from './measure/herd.js';
import { measureScale } from './measure/scale.js';
import { measureShards } from './measure/shards.js';
import { measurePeers } from './peers/index.js';

let plan;
try {
  plan = parsePlan(process.argv.slice(2));
} catch (err) {
  if (err instanceof UsageError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(64);
  }
  throw err;
}

const started = performance.now();
const machine = { ...machineRecord(plan.mode), scope: benchScope(plan) };
const dir = mkdtempSync(join(tmpdir(), 'baton-bench-'));
const ctx: BenchContext = {
  plan,
  results: new Results(),
  dir,
  notes: machine.notes,
  log: (m) => process.stdout.write(`${m}\n`),
};
let failures = 0;
machine.fsyncP50Ms = fsyncMs(dir);

async function step(name: string, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    failures++;
    const message = err instanceof Error ? err.message : String(err);
    ctx.notes.push(`${name} failed: ${message.split('\n')[0]}`);
    process.stderr.write(`bench: ${name} failed: ${message}\n`);
  }
}

const stores: StoreUnderTest[] = [];
const kinds = STORE_KINDS.filter((k) => !plan.stores || plan.stores.has(k.name));
for (const name of plan.stores ?? []) {
  if (!STORE_KINDS.some((k) => k.name === name)) {
    process.stderr.write(`bench: --stores: unknown store "${name}" (known: ${STORE_KINDS.map((k) => k.name).join(', ')})\n`);
    process.exit(64);
  }
}
ctx.log(`bench (${plan.mode}) on ${machine.cores} × ${machine.cpuModel}, Node ${machine.node}, load ${machine.loadAverageAtStart.join(' ')}`);
for (const kind of kinds) {
  if (!isRegistered(kind)) {
    ctx.notes.push(`${kind.name}: not registered in src/stores/registry.ts, skipped`);
    continue;
  }
  await step(`starting ${kind.name}`, async () => {
    const store = await kind.start(dir);
    machine.servers[kind.name] = store.serverVersion;
    stores.push({ kind, store });
  });
}

const run = (name: MeasurementName) => plan.only.has(name);
const elapsed = () => Math.round((performance.now() - started) / 1000);
const perStore = async (name: MeasurementName, label: string, fn: (s: StoreUnderTest) => Promise<void>) => {
  if (!run(name)) return;
  ctx.log(`\n# ${label} (at ${elapsed()} s)`);
  for (const s of stores) await step(`${name} on ${s.kind.name}`, () => fn(s));
};

try {
  await perStore('rtt', 'store round trip (renewal compare-and-set)', (s) => measureRtt(ctx, s));
  await perStore('handover', 'graceful handover', (s) => measureHandover(ctx, s));
  await perStore('directed', 'directed handover beside release-and-race', (s) => measureDirectedHandover(ctx, s));
  if (run('peers')) {
    ctx.log(`\n# peers (at ${elapsed()} s)`);
    await step('peers', () => measurePeers(ctx, stores));
  }
  await perStore('failover', 'crash failover (SIGKILL of the leader process)', (s) => measureFailover(ctx, s));
  if (run('idle')) {
    ctx.log(`\n# idle standby load, all stores at once on their separate servers (at ${elapsed()} s)`);
    await step('idle', () => measureIdle(ctx, stores));
  }
  await perStore('herd', 'thundering herd', (s) => measureHerd(ctx, s));
  await perStore('scale', 'many leases in one process', (s) => measureScale(ctx, s));
  await perStore('shards', 'shard groups: N shards over M member processes', (s) => measureShards(ctx, s));
} finally {
  for (const s of stores) await step(`stopping ${s.kind.name}`, () => s.store.stop());
  rmSync(dir, { recursive: true, force: true });
}

machine.loadAverageAtEnd = loadavg().map((x) => Math.round(x * 100) / 100);
machine.durationS = Math.round((performance.now() - started) / 1000);
const written = writeOutputs(plan, { machine, results: ctx.results.rows });
ctx.log(`\nwrote ${written.join(', ')} in ${machine.durationS}s${failures ? ` — ${failures} step(s) failed` : ''}`);
process.exit(failures ? 1 : 0);

/** benchScope says what this run measured, for the report's first line (a subset is not a full run). */
function benchScope(p: import("./plan.js").BenchPlan): string {
  if (p.official) return 'everything';
  const parts = [
    ...(p.only.size < MEASUREMENTS.length ? [`--only=${[...p.only].join(',')}`] : []),
    ...(p.stores ? [`--stores=${[...p.stores].join(',')}`] : []),
    ...(process.env.BENCH_LEASE_COUNTS ? [`BENCH_LEASE_COUNTS=${process.env.BENCH_LEASE_COUNTS}`] : []),
  ];
  return parts.length ? `a subset: ${parts.join(' ')}` : 'everything';
}
