/**
 * leader_round_trips_per_renew, leader_server_requests_per_renew, cpu_percent, rss_mb — one
 * process (bench/scale-child.ts, so its RSS is its own) holding 1, 1,000 and 10,000 leases with
 * many LeaderElectors on one store handle, default timing (renewal every 2 s). Renewals due in
 * the same event-loop turn are coalesced by src/core/batcher.ts into one `renewMany`.
 *
 * Electors start 500 at a time (each wave elected before the next; see scale-child.ts). Over a
 * window of renew intervals, once every lease is held and one more interval has passed:
 * - round trips: calls into the store (a wrapper in the child: each write or renewMany is one
 *   round trip, as every store sends a batch in one pipeline / statement / stream write);
 * - server requests: the server's own counters (commands, statements, gRPC messages);
 * - CPU: process.cpuUsage() over the window, as % of one core; RSS at the window's end.
 *
 * The child runs as JavaScript compiled by tsc (compiled-child.ts), as a user's process does:
 * under tsx its loader and keep-names wrappers add memory and CPU no deployment pays. If the
 * compile fails it runs under tsx, and a note, the settings and each row's `runtime` say so.
 * BENCH_SCALE_RUNTIME=tsx forces tsx (to compare); BENCH_SCALE_PROFILE=DIR writes a CPU
 * profile of the window (and a heap snapshot at its end) into DIR.
 */
import { spawnBench, type ChildEvent } from '../proc.js';
import { compiledChild, type CompiledChild } from '../compiled-child.js';
import { sleep } from '../clock.js';
import { diffCounts, type CountSession } from '../counters.js';
import { diffCalls, type StoreCalls } from '../counting-store.js';
import { round } from '../stats.js';
import type { BenchContext, StoreUnderTest } from '../plan.js';
import type { ResultRow } from '../results.js';

const RETRY_MS = 2000;
const WAVE = 500;
const ACQUIRE_TIMEOUT_MS = 90_000;

type Mark = ChildEvent & { cpuMs: number; rssMb: number; heapMb: number; calls: StoreCalls; statements: Record<string, number>; storeErrors: number; lost: number; leading: number; renewals: number };

let compiled: CompiledChild | undefined;

/** measureScale adds the scale rows for every lease count of the plan. */
export async function measureScale(ctx: BenchContext, s: StoreUnderTest): Promise<void> {
  if (!compiled) {
    compiled = process.env.BENCH_SCALE_RUNTIME === 'tsx' ? { runtime: 'tsx', why: 'BENCH_SCALE_RUNTIME=tsx' } : compiledChild('scale-child.ts');
    if (compiled.runtime === 'tsx') ctx.notes.push(`scale: the child ran from src under tsx, not as compiled JS (${compiled.why}); its CPU and RSS include tsx's loader`);
  }
  for (const leases of ctx.plan.leaseCounts) {
    const limit = s.kind.scaleLimit;
    if (limit && leases > limit.leases) {
      ctx.notes.push(`scale on ${s.kind.name}: ${leases} leases not measured: ${limit.why}`);
      continue;
    }
    await scaleOne(ctx, s, leases);
  }
}

async function scaleOne(ctx: BenchContext, s: StoreUnderTest, leases: number): Promise<void> {
  const run = compiled!;
  const profileDir = process.env.BENCH_SCALE_PROFILE;
  const config = { storeUrl: s.store.url, leases, acquireTimeoutMs: ACQUIRE_TIMEOUT_MS, wave: WAVE, profile: profileDir ? `${profileDir}/${s.kind.name}-${leases}` : undefined };
  const child = spawnBench('scale-child.ts', { BENCH_SCALE: JSON.stringify(config) }, { js: run.runtime === 'compiled' ? run.entry : undefined });
  let session: CountSession | undefined;
  try {
    const acquired = await child.seen((e) => e.ev === 'acquired', ACQUIRE_TIMEOUT_MS + 60_000, `all ${leases} leases acquired`);
    await sleep(RETRY_MS);
    session = await s.store.counter?.begin();
    const mark = async () => {
      const pending = child.next((e) => e.ev === 'mark', 30_000, 'mark');
      child.send('mark');
      const m = (await pending) as Mark;
      const server = await session?.snapshot();
      return { m, server };
    };
    const a = await mark();
    await sleep(ctx.plan.scaleIntervals * RETRY_MS);
    const b = await mark();
    const seconds = (b.m.t - a.m.t) / 1000;
    // A renew cycle is the time in which every lease renews once: renewals ÷ leases of them.
    const cycles = (b.m.renewals - a.m.renewals) / leases;
    const intervals = cycles > 0 ? cycles : (seconds * 1000) / RETRY_MS;
    const calls = diffCalls(a.m.calls, b.m.calls);
    const roundTrips = calls.write + calls.renewMany + calls.read;
    const server = a.server && b.server ? diffCounts(a.server, b.server) : diffCounts(new Map(Object.entries(a.m.statements)), new Map(Object.entries(b.m.statements)));
    const common = {
      system: `baton-${s.kind.name}`,
      store: s.kind.name,
      leases,
      settings: `default timing (renewal every 2 s); one process, one store handle; electors started ${WAVE} at a time; ${run.runtime === 'compiled' ? 'compiled JS' : 'src under tsx'}`,
    } as const;
    const detail = {
      runtime: run.runtime === 'compiled' ? 'node, JS compiled by tsc (as npm run build)' : `node --import tsx, from src (${run.why})`,
      windowS: round(seconds, 1),
      renewCycles: round(cycles, 2),
      acquireAllMs: Math.round(Number(acquired.ms)),
      electedBeforeWindow: acquired.elected,
      startUpStoreErrors: acquired.storeErrors,
      startUpErrorKinds: acquired.errorKinds,
      storeCallsInWindow: calls,
      leadingAtEnd: b.m.leading,
      leadershipsLost: b.m.lost,
      storeErrors: b.m.storeErrors - a.m.storeErrors,
    };
    const rows: ResultRow[] = [
      {
        ...common,
        metric: 'leader_round_trips_per_renew',
        unit: 'round trips per renew cycle',
        value: round(roundTrips / intervals, 2),
        method: 'calls into the store (writes + renewMany + reads, counted by a wrapper in the child) per renew cycle (renewals in the window ÷ leases; per 2 s when no renewal succeeded)',
        detail: { ...detail, renewalsPerBatch: calls.renewMany ? round(calls.renewItems / calls.renewMany, 1) : undefined },
      },
      {
        ...common,
        metric: 'leader_server_requests_per_renew',
        unit: 'server requests per renew cycle',
        value: round(server.total / intervals, 1),
        method: s.store.counter ? s.store.counter.source : 'SQL statements run by the child (better-sqlite3 wrapper)',
        detail: { byKindPerInterval: Object.fromEntries(Object.entries(server.byKind).map(([k, v]) => [k, round(v / intervals, 1)])) },
      },
      { ...common, metric: 'cpu_percent', unit: '% of one core', value: round(((b.m.cpuMs - a.m.cpuMs) / (seconds * 1000)) * 100, 2), method: `process.cpuUsage() (user + system) of the child over the window; the child runs ${run.runtime === 'compiled' ? 'as JS compiled by tsc, as a user process does' : 'from src under tsx (it could not be compiled), which costs more than a user process'}` },
      { ...common, metric: 'rss_mb', unit: 'MB', value: round(b.m.rssMb, 1), method: `process.memoryUsage().rss of the child at the end of the window (${run.runtime === 'compiled' ? 'JS compiled by tsc, no tsx loader' : 'under tsx, whose loader is part of it'})`, detail: { heapUsedMb: round(b.m.heapMb, 1) } },
    ];
    for (const row of rows) ctx.results.add(row);
  } finally {
    await session?.end();
    await child.stop(90_000);
  }
}
