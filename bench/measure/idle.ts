/**
 * idle_standby_rps — store requests per second caused by one idle standby while a leader
 * holds the lock and renews, at default timing (lease 15 s, renew deadline 10 s, retry 2 s).
 * The standby is its own process (bench/candidate.ts) with its own connections; the leader is
 * an elector in this process.
 *
 * Counted at the server, by the means each store allows:
 * - role: the standby connects as its own PostgreSQL role; pg_stat_statements counts that role
 *   alone (exact, heartbeats of its LISTEN session included).
 * - differential: Redis and etcd cannot tell clients apart in their counters, so the server's
 *   count over a window of n leader renewals with the standby running, minus the count over n
 *   renewals before it started. Windows start and end on the leader's `renewed` events, so the
 *   leader's share is the same in both.
 * - in-process (SQLite, no server): the standby process counts the calls its elector makes into
 *   the store (a wrapper) and, for reference, every SQL statement it runs (including the
 *   store's own 100 ms `PRAGMA data_version` poll).
 * Every store's figures are taken concurrently (separate servers).
 */
import { randomBytes } from 'node:crypto';
import { LeaderElector } from '../../src/core/elector.js';
import { openStore } from '../../src/stores/registry.js';
import { monoMs, sleep } from '../clock.js';
import { diffCounts, subtractDeltas, type CountDelta, type CountSession } from '../counters.js';
import { diffCalls, totalCalls, type StoreCalls } from '../counting-store.js';
import { spawnBench, type BenchChild, type ChildEvent } from '../proc.js';
import { round } from '../stats.js';
import type { BenchContext, StoreUnderTest } from '../plan.js';

/** measureIdle adds one idle_standby_rps row per store. */
export async function measureIdle(ctx: BenchContext, stores: readonly StoreUnderTest[]): Promise<void> {
  const outcomes = await Promise.allSettled(stores.map((s) => idleOne(ctx, s)));
  const failed = outcomes.flatMap((o, i) => (o.status === 'rejected' ? [`${stores[i]!.kind.name}: ${String((o.reason as Error)?.message ?? o.reason)}`] : []));
  if (failed.length) throw new Error(failed.join('; '));
}

async function idleOne(ctx: BenchContext, s: StoreUnderTest): Promise<void> {
  const lock = `idle-${randomBytes(4).toString('hex')}`;
  const counter = s.store.counter;
  const mode = !counter ? 'in-process' : counter.perRole && s.store.roleUrl ? 'role' : 'differential';
  const leaderStore = await openStore(s.store.url);
  const leader = new LeaderElector({ store: leaderStore, lock, identity: 'idle-leader' }).on('storeError', () => {});
  const renewed = () => new Promise<void>((resolve) => leader.once('renewed', () => resolve()));
  let child: BenchChild | undefined;
  let session: CountSession | undefined;
  try {
    session = await counter?.begin();
    leader.start();
    await leader.elected();
    const n = ctx.plan.idleRenewals;
    /** window counts over n leader renewals, starting and ending just after one. */
    const window = async (count: () => Promise<Counted>): Promise<{ delta: Counted; seconds: number }> => {
      await renewed();
      await sleep(20);
      const a = await count();
      const t0 = monoMs();
      for (let i = 0; i < n; i++) await renewed();
      await sleep(20);
      const b = await count();
      return { delta: minus(b, a), seconds: (monoMs() - t0) / 1000 };
    };
    const server = (role?: string) => async (): Promise<Counted> => ({ server: diffCounts(new Map(), await session!.snapshot(role ? { role } : {})) });
    const baseline = mode === 'differential' ? await window(server()) : undefined;
    const standbyUrl = mode === 'role' ? await s.store.roleUrl!('bench_standby') : s.store.url;
    child = spawnBench('candidate.ts', {
      BENCH_CANDIDATE: JSON.stringify({ storeUrl: standbyUrl, lock, identity: 'idle-standby', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }),
    });
    await child.seen((e) => e.ev === 'leader' && e.holder === 'idle-leader', 60_000, 'a sight of the leader');
    // Start-up traffic (connect, subscribe, first read) is not idle load. A standby whose first
    // read came before its subscription was confirmed (Redis) reads once more, within one
    // jittered retry period (2 s × (1 + 1.2) at most), and only then waits on its feed alone.
    await sleep(2_000 * 2.2 + 1000);
    const fromChild = (c: BenchChild) => async (): Promise<Counted> => {
      const pending = c.next((e) => e.ev === 'counts', 10_000, 'counts');
      c.send('counts');
      const e = (await pending) as ChildEvent & { calls: StoreCalls; statements: Record<string, number> };
      return { calls: e.calls, server: { total: sum(e.statements), byKind: e.statements } };
    };
    const measured = await window(mode === 'in-process' ? fromChild(child) : server(mode === 'role' ? 'bench_standby' : undefined));
    const standby = baseline ? subtractDeltas(measured.delta.server!, baseline.delta.server!) : measured.delta.server!;
    const perS = (x: number) => round(x / measured.seconds, 4);
    const calls = measured.delta.calls;
    const value = mode === 'in-process' ? perS(totalCalls(calls!)) : perS(standby.total);
    ctx.results.add({
      system: `baton-${s.kind.name}`,
      store: s.kind.name,
      metric: 'idle_standby_rps',
      unit: 'requests/s',
      value,
      n: Math.round(measured.seconds),
      settings: 'default timing (lease 15 s, renew deadline 10 s, retry 2 s)',
      method: METHODS[mode] + (counter ? ` — ${counter.source}` : ''),
      detail: {
        windowS: round(measured.seconds, 1),
        mode,
        perSecondByKind: Object.fromEntries(Object.entries(standby.byKind).map(([k, v]) => [k, perS(v)])),
        ...(calls ? { storeCallsPerS: perS(totalCalls(calls)), sqlStatementsPerS: perS(standby.total) } : {}),
      },
    });
  } finally {
    await child?.stop(5000);
    await session?.end();
    await leader.stop();
    await leaderStore.close();
  }
}

const METHODS = {
  role: 'server counter for the standby’s own role over n leader renewals',
  differential: 'server counter over n leader renewals with the standby, minus n renewals without it',
  'in-process': 'store calls made by the standby process (wrapper; SQLite has no server)',
} as const;

interface Counted {
  server?: CountDelta;
  calls?: StoreCalls;
}

function minus(b: Counted, a: Counted): Counted {
  return {
    server: b.server && a.server ? subtractDeltas(b.server, a.server) : undefined,
    calls: b.calls && a.calls ? diffCalls(a.calls, b.calls) : undefined,
  };
}

function sum(o: Record<string, number>): number {
  return Object.values(o).reduce((a, b) => a + b, 0);
}
