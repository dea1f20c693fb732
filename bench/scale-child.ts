/**
 * The scale child: one process, one store handle, N LeaderElectors on N locks (default timing),
 * so its CPU and RSS are its own. Started by measure/scale.ts with BENCH_SCALE (JSON, see
 * ScaleConfig); prints JSON lines on stdout.
 *
 * After every elector is elected it prints `acquired`; each `mark` on stdin answers with a
 * `mark` line (CPU time, RSS, heap, store calls and renewals so far); `stop` stops every elector (releasing)
 * and exits.
 */
import { createInterface } from 'node:readline';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { LeaderElector } from '../src/core/elector.js';
import { openStore } from '../src/stores/registry.js';
import { monoMs } from './clock.js';
import { countingStore } from './counting-store.js';
import { installSqliteStatementCounter, sqliteStatementSnapshot } from './sqlite-statements.js';

/** ScaleConfig is what measure/scale.ts passes in BENCH_SCALE. */
export interface ScaleConfig {
  storeUrl: string;
  leases: number;
  /** Give up waiting for every lease after this long, and measure what is held. */
  acquireTimeoutMs: number;
  /**
   * How many electors start at once. Starting 10,000 at once overloads some stores' clients
   * (etcd: thousands of concurrent campaigns hit the 2 s call deadline and retry in a storm),
   * which is a start-up problem, not what this measures: the steady cost of holding N leases.
   */
  wave: number;
  /**
   * A path prefix: the first `mark` starts a CPU profile (node:inspector), the next writes it to
   * `<profile>.cpuprofile` and a heap snapshot to `<profile>.heapsnapshot`, so the profile holds
   * the measured window only. The profiler costs CPU: a profiled run's figures are not reported.
   */
  profile?: string;
}

const config = JSON.parse(process.env.BENCH_SCALE ?? 'null') as ScaleConfig | null;
if (!config) {
  process.stderr.write('scale-child: BENCH_SCALE is not set (this process is started by bench/run.ts)\n');
  process.exit(64);
}
const emit = (e: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(e)}\n`);
if (config.storeUrl.startsWith('sqlite:')) installSqliteStatementCounter();

const counted = countingStore(await openStore(config.storeUrl));
const run = randomBytes(3).toString('hex');
let storeErrors = 0;
const errorKinds = new Map<string, number>();
let lost = 0;
let renewals = 0;
const electors = Array.from({ length: config.leases }, (_, i) =>
  new LeaderElector({ store: counted.store, lock: `scale-${run}-${i}`, identity: `scale-${run}` })
    .on('storeError', (err) => {
      storeErrors++;
      const kind = err.message.replace(/"[^"]*"/g, '"…"').replace(/\d+/g, 'N').slice(0, 90);
      errorKinds.set(kind, (errorKinds.get(kind) ?? 0) + 1);
    })
    .on('stopped', ({ reason }) => reason !== 'stopped' && lost++)
    .on('renewed', () => renewals++),
);
const t0 = monoMs();
let elected = 0;
const progress = setInterval(() => emit({ ev: 'progress', t: monoMs(), elected, storeErrors, errorKinds: Object.fromEntries(errorKinds) }), 5000);
// Electors start `wave` at a time, each wave elected before the next (see ScaleConfig.wave).
// If the time runs out the window measures what is held: that is a finding too.
for (let i = 0; i < electors.length && monoMs() - t0 < config.acquireTimeoutMs; i += config.wave) {
  for (const e of electors.slice(i, i + config.wave)) e.once('elected', () => elected++).start();
  const target = Math.min(electors.length, i + config.wave);
  while (elected < target && monoMs() - t0 < config.acquireTimeoutMs) await new Promise((r) => setTimeout(r, 20));
}
clearInterval(progress);
emit({ ev: 'acquired', t: monoMs(), ms: monoMs() - t0, elected, storeErrors, errorKinds: Object.fromEntries(errorKinds) });

let session: Session | undefined;
let marks = 0;
/** profileMark starts the window's CPU profile at the first mark and writes it (and a heap snapshot) at the second. */
async function profileMark(prefix: string): Promise<void> {
  if (++marks === 1) {
    session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  } else if (marks === 2 && session) {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(`${prefix}.cpuprofile`, JSON.stringify(profile));
    const chunks: string[] = [];
    session.on('HeapProfiler.addHeapSnapshotChunk', (m) => chunks.push(m.params.chunk));
    await session.post('HeapProfiler.takeHeapSnapshot');
    writeFileSync(`${prefix}.heapsnapshot`, chunks.join(''));
    session.disconnect();
  }
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const cmd = line.trim();
  if (cmd === 'mark') {
    // Stop the profiler after the mark's figures are read; start it after the first mark's.
    if (config.profile) setImmediate(() => void profileMark(config.profile!));
    const cpu = process.cpuUsage();
    const mem = process.memoryUsage();
    emit({
      ev: 'mark',
      t: monoMs(),
      cpuMs: (cpu.user + cpu.system) / 1000,
      rssMb: mem.rss / 2 ** 20,
      heapMb: mem.heapUsed / 2 ** 20,
      calls: counted.snapshot(),
      statements: Object.fromEntries(sqliteStatementSnapshot()),
      storeErrors,
      errorKinds: Object.fromEntries(errorKinds),
      renewals,
      lost,
      leading: electors.filter((e) => e.isLeader()).length,
    });
  } else if (cmd === 'stop') {
    void (async () => {
      await Promise.race([Promise.all(electors.map((e) => e.stop())), new Promise((r) => setTimeout(r, 60_000))]);
      await counted.store.close();
      emit({ ev: 'exit', t: monoMs() });
      process.exit(0);
    })();
  }
});
