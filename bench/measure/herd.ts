/**
 * ops_per_candidate_per_failover — the thundering-herd check: 200 candidates on one lock; the
 * leader stops (releasing), and the store operations all the others cause until a new leader
 * is elected and the standbys have gone quiet (within a 2 s window) are counted at the server,
 * net of the background rate measured just before, and divided by the number of standbys.
 *
 * The candidates share 20 store handles (10 electors each) in this process — 200 handles would
 * be 200 PostgreSQL LISTEN sessions plus pools. Each elector still makes its own reads and writes;
 * a wrapper per elector also gives the most operations any single candidate made. SQLite (no
 * server) counts the wrappers' calls, with the SQL statements run alongside.
 *
 * Timing: lease 60 s / renew deadline 40 s / retry 2 s, so that no standby's own expiry
 * re-read or queued-key keepalive (etcd: every TTL / 3) falls inside the measured windows.
 */
import { randomBytes } from 'node:crypto';
import { LeaderElector } from '../../src/core/elector.js';
import { openStore } from '../../src/stores/registry.js';
import type { LeaseStore } from '../../src/core/store.js';
import { monoMs, sleep, waitFor } from '../clock.js';
import { diffCounts, type Counts, type CountSession } from '../counters.js';
import { countingStore, diffCalls, totalCalls, type CountingStore, type StoreCalls } from '../counting-store.js';
import { installSqliteStatementCounter, sqliteStatementSnapshot } from '../sqlite-statements.js';
import { round } from '../stats.js';
import type { BenchContext, StoreUnderTest } from '../plan.js';

const PER_HANDLE = 10;
const WINDOW_MS = 2000;
const TIMING = { leaseDurationMs: 60_000, renewDeadlineMs: 40_000, retryPeriodMs: 2_000 };

interface Candidate {
  elector: LeaderElector;
  counted: CountingStore;
}

/** measureHerd adds one ops_per_candidate_per_failover row for `s`. */
export async function measureHerd(ctx: BenchContext, s: StoreUnderTest): Promise<void> {
  // Standbys of a store without notification poll every retry period: they never go quiet, so
  // a failover's own cost cannot be told apart (their steady cost is the idle measurement).
  if (!s.kind.notifies) {
    ctx.notes.push(`herd: ${s.kind.name} has no notification (standbys poll every retry period); see idle_standby_rps instead`);
    ctx.log(`  ${s.kind.name}: skipped (no notification: standbys poll, they never go quiet)`);
    return;
  }
  const n = ctx.plan.herdCandidates;
  const sqlite = !s.store.counter;
  if (sqlite) installSqliteStatementCounter();
  const handles: LeaseStore[] = [];
  for (let i = 0; i < Math.ceil(n / PER_HANDLE); i++) handles.push(await openStore(s.store.url));
  const lock = `herd-${randomBytes(4).toString('hex')}`;
  let live: Candidate[] = Array.from({ length: n }, (_, i) => {
    const counted = countingStore(handles[Math.floor(i / PER_HANDLE)]!);
    return { counted, elector: new LeaderElector({ store: counted.store, lock, identity: `herd${i}`, ...TIMING }).on('storeError', () => {}) };
  });
  const everyone = [...live];
  let session: CountSession | undefined;
  const snapshot = async (): Promise<Counts> => (sqlite ? callCounts(everyone) : session!.snapshot());
  const failovers: Record<string, unknown>[] = [];
  try {
    session = await s.store.counter?.begin();
    for (const c of live) c.elector.start();
    let leader = await firstLeader(live);
    await quiet(live, leader);
    for (let f = 0; f < ctx.plan.herdFailovers; f++) {
      // Background first: heartbeats and the like, over a window as long as the failover's.
      const q0 = await snapshot();
      const tq = monoMs();
      await sleep(WINDOW_MS);
      const background = diffCounts(q0, await snapshot()).total / (monoMs() - tq);
      const before = live.map((c) => c.counted.snapshot());
      const b0 = await snapshot();
      const sql0 = sqliteStatementSnapshot();
      const t0 = monoMs();
      const standbys = live.filter((c) => c !== leader);
      const next = Promise.race(standbys.map((c) => c.elector.elected().then(() => c)));
      await leader.elector.stop();
      const newLeader = await next;
      const handoverMs = monoMs() - t0;
      await sleep(Math.max(0, t0 + WINDOW_MS - monoMs()));
      const delta = diffCounts(b0, await snapshot());
      const elapsed = monoMs() - t0;
      const ops = delta.total - background * elapsed;
      const callsOf = standbys.map((c) => diffCalls(before[live.indexOf(c)]!, c.counted.snapshot()));
      const perCandidate = callsOf.map(totalCalls);
      const busiest = callsOf.map((c, i) => ({ identity: standbys[i]!.elector.identity, read: c.read, write: c.write })).sort((x, y) => y.read + y.write - x.read - x.write);
      failovers.push({
        standbys: standbys.length,
        opsPerCandidate: round(ops / standbys.length, 3),
        serverOps: delta.total,
        backgroundOps: round(background * elapsed, 1),
        byKind: delta.byKind,
        maxCallsByOneCandidate: Math.max(...perCandidate),
        busiestCandidates: busiest.slice(0, 3),
        candidateCallsTotal: perCandidate.reduce((x, y) => x + y, 0),
        handoverMs: round(handoverMs, 1),
        ...(sqlite ? { sqlStatements: diffCounts(sql0, sqliteStatementSnapshot()).total } : {}),
      });
      live = standbys;
      leader = newLeader;
      await quiet(live, leader);
    }
  } finally {
    await session?.end();
    await Promise.all(live.map((c) => c.elector.stop()));
    await Promise.all(handles.map((h) => h.close()));
  }
  const values = failovers.map((f) => f.opsPerCandidate as number);
  ctx.results.add({
    system: `baton-${s.kind.name}`,
    store: s.kind.name,
    metric: 'ops_per_candidate_per_failover',
    unit: 'store ops per candidate per failover',
    value: round(values.reduce((a, b) => a + b, 0) / values.length, 3),
    max: Math.max(...failovers.map((f) => f.maxCallsByOneCandidate as number)),
    n: failovers.length,
    settings: `${n} candidates on one lock, ${PER_HANDLE} per store handle; lease 60 s, retry 2 s; graceful release (stop)`,
    method: sqlite
      ? 'store calls (wrappers, SQLite has no server) net of background, ÷ standbys; max = most calls by one candidate'
      : `server counter net of the background rate, ÷ standbys — ${s.store.counter!.source}; max = most store calls by one candidate (wrapper)`,
    detail: { failovers },
  });
}

function callCounts(live: readonly Candidate[]): Counts {
  const sum: Record<keyof StoreCalls, number> = { read: 0, write: 0, renewMany: 0, renewItems: 0, list: 0, watch: 0 };
  for (const c of live) for (const k of Object.keys(sum) as (keyof StoreCalls)[]) sum[k] += c.counted.calls[k];
  return new Map([['read', sum.read], ['write', sum.write], ['renewMany', sum.renewMany], ['list', sum.list]]);
}

async function firstLeader(live: readonly Candidate[]): Promise<Candidate> {
  return Promise.race(live.map((c) => c.elector.elected().then(() => c)));
}

/**
 * quiet waits until no standby has called the store for a second: everyone has reacted. (On
 * etcd a queued standby watches only the key ahead of it, so "has seen the new leader" is not
 * something every standby ever reports.)
 */
async function quiet(live: readonly Candidate[], leader: Candidate): Promise<void> {
  const standbyCalls = () => live.reduce((n, c) => (c === leader ? n : n + totalCalls(c.counted.calls)), 0);
  let last = standbyCalls();
  let since = monoMs();
  await waitFor(
    'the standbys to go quiet',
    () => {
      const now = standbyCalls();
      if (now !== last) {
        last = now;
        since = monoMs();
      }
      return monoMs() - since >= 1000 ? true : undefined;
    },
    60_000,
    50,
  );
}
