/**
 * shard_rebalance_ms, shards_moved, shard_store_rps — a ShardGroup of N shards over M member
 * processes (bench/shard-member.ts, one store handle each), for each size of the plan:
 *
 * 1. All M members join at once; once the assignment is balanced (every shard owned by a live
 *    member, each member owning ⌊N/M⌋ or ⌈N/M⌉) and has stayed so for a retry period, the store
 *    requests of a rest window are counted.
 * 2. A member joins (its process already started and its store opened, so Node's start-up is not
 *    timed): the time from its start until the assignment is balanced again over M + 1; the shards
 *    that changed owner against the minimum possible (the joiner's quota ⌊N/(M+1)⌋) and against two
 *    other schemes computed on the same membership change — modulo (shard s to the (s mod M)-th
 *    member, sorted) and release-everything (kazoo's SetPartitioner: every shard released and
 *    re-acquired); the store requests per second during the rebalance.
 * 3. A member is killed (SIGKILL): the same, until balanced over the M survivors; the minimum is
 *    the victim's own shards.
 *
 * "Balanced" is judged from the members' own acquired/released lines and timed at the line that
 * completed it (one CLOCK_MONOTONIC timeline for every process). Store requests are the server's
 * own counter where there is one (PostgreSQL pg_stat_statements, Redis MONITOR), else the SQL
 * statements the members ran (SQLite); store calls (the members' wrappers) are given beside.
 */
import { spawnBench, type BenchChild, type ChildEvent } from '../proc.js';
import { monoMs, sleep } from '../clock.js';
import { diffCounts, type CountSession, type Counts } from '../counters.js';
import { round } from '../stats.js';
import type { BenchContext, StoreUnderTest } from '../plan.js';
import { movedShards, nextAssignment, ownerNames, type ShardAssignment } from '../../src/shards/assignment.js';

/** SHARD_TIMING is the members' timing: shorter than the defaults (15 s / 10 s / 2 s) so a kill settles in seconds. */
export const SHARD_TIMING = { leaseDurationMs: 5000, renewDeadlineMs: 3000, retryPeriodMs: 1000 };
/** The stores the shard section runs on: SQLite and the network stores with a server counter. */
const SHARD_STORES = new Set(['sqlite', 'postgres', 'redis']);
const BALANCE_TIMEOUT_MS = 240_000;

interface Member {
  identity: string;
  child: BenchChild;
  owned: Set<number>;
  alive: boolean;
  /** The size of the membership this member last said it sees. */
  lastView: number;
}

type Count = ChildEvent & {
  identity: string;
  calls: number;
  renewBatches: number;
  renewItems: number;
  sql: number;
  statements: Record<string, number>;
  cpuMs: number;
  storeErrors: number;
  lastError: string;
  releasedBy: Record<string, number>;
  loopDelay: { p99Ms: number; maxMs: number };
  rssMb: number;
};

/** measureShards adds the shard rows for every size of the plan. */
export async function measureShards(ctx: BenchContext, s: StoreUnderTest): Promise<void> {
  if (!SHARD_STORES.has(s.kind.name)) {
    ctx.log(`  (shards: not run on ${s.kind.name}; the section uses ${[...SHARD_STORES].join(', ')})`);
    return;
  }
  for (const size of ctx.plan.shardSizes) await shardOne(ctx, s, size.shards, size.members);
}

async function shardOne(ctx: BenchContext, s: StoreUnderTest, shards: number, count: number): Promise<void> {
  const group = `bench-${shards}x${count}-${Math.random().toString(36).slice(2, 6)}`;
  const members: Member[] = [];
  let lastChange = monoMs();
  let acquisitions = 0;
  /** Views in which a member saw the membership shrink (after a kill: once per survivor; after a join: a live member taken for dead). */
  let shrunkViews = 0;
  const spawnMember = (i: number): Member => {
    const identity = `m${String(i).padStart(2, '0')}`;
    const child = spawnBench('shard-member.ts', {
      BENCH_SHARD_MEMBER: JSON.stringify({ storeUrl: s.store.url, group, shards, identity, ...SHARD_TIMING }),
    });
    const m: Member = { identity, child, owned: new Set(), alive: true, lastView: 0 };
    child.on((e) => {
      if (e.ev === 'acquired') {
        m.owned.add(e.shard as number);
        acquisitions++;
      } else if (e.ev === 'released') {
        m.owned.delete(e.shard as number);
      } else {
        if (e.ev === 'members') {
          if ((e.live as number) < m.lastView) shrunkViews++;
          m.lastView = e.live as number;
        }
        return;
      }
      lastChange = Math.max(lastChange, e.t);
    });
    members.push(m);
    return m;
  };
  const live = () => members.filter((m) => m.alive);
  const owners = (): string[] => {
    const out = new Array<string>(shards).fill('');
    for (const m of live()) for (const sh of m.owned) out[sh] = out[sh] ? '*' : m.identity;
    return out;
  };
  const balanced = (): boolean => {
    const ms = live();
    const lo = Math.floor(shards / ms.length);
    const hi = Math.ceil(shards / ms.length);
    let total = 0;
    for (const m of ms) {
      if (m.owned.size < lo || m.owned.size > hi) return false;
      total += m.owned.size;
    }
    return total === shards && owners().every((o) => o !== '' && o !== '*');
  };
  /** untilBalanced resolves with the monotonic time of the line that made the assignment balanced. */
  const untilBalanced = async (what: string): Promise<number> => {
    const from = monoMs();
    const until = from + BALANCE_TIMEOUT_MS;
    let nextReport = from + 10_000;
    for (;;) {
      if (balanced()) return lastChange;
      if (monoMs() > nextReport) {
        // A slow convergence is worth seeing as it happens: loads, shards owned, shrinking views.
        nextReport += 10_000;
        const loads = live().map((m) => m.owned.size);
        ctx.log(`    … ${Math.round((monoMs() - from) / 1000)} s after ${what}: loads ${Math.min(...loads)}–${Math.max(...loads)}, ${owners().filter((o) => o !== '').length} of ${shards} owned, ${shrunkViews} shrinking membership views so far`);
        ctx.log(`      ${diagnosis(await countAll(live()))}`);
      }
      if (monoMs() > until) {
        const counts = await countAll(live());
        const errors = counts.reduce((n, c) => n + c.storeErrors, 0);
        throw new Error(`shards: ${shards} over ${live().length} not balanced ${BALANCE_TIMEOUT_MS / 1000} s after ${what}: loads ${live().map((m) => m.owned.size).join('/')}, ${errors} store errors (${counts.find((c) => c.lastError)?.lastError ?? 'none'})`);
      }
      await sleep(20);
    }
  };
  let session: CountSession | undefined;
  // A killed member's counts stay at what it last said (it is killed right after a count).
  const last = new Map<string, Count>();
  const requests = async (): Promise<{ t: number; server: number; byKind: Counts; calls: number; cpuMs: number; rssMb: number }> => {
    for (const c of await countAll(live())) last.set(c.identity, c);
    const counts = [...last.values()];
    const byKind: Counts = new Map();
    if (session) for (const [k, v] of await session.snapshot()) byKind.set(k, v);
    else for (const c of counts) for (const [k, v] of Object.entries(c.statements)) byKind.set(k, (byKind.get(k) ?? 0) + v);
    const server = session ? diffCounts(new Map(), byKind).total : counts.reduce((n, c) => n + c.sql, 0);
    return {
      t: monoMs(),
      server,
      byKind,
      calls: counts.reduce((n, c) => n + c.calls, 0),
      cpuMs: counts.reduce((n, c) => n + c.cpuMs, 0),
      rssMb: live().reduce((n, m) => n + (last.get(m.identity)?.rssMb ?? 0), 0),
    };
  };
  try {
    ctx.log(`  ${s.kind.name}: ${shards} shards over ${count} members: starting the processes`);
    for (let i = 0; i < count; i++) spawnMember(i);
    await Promise.all(members.map((m) => m.child.seen((e) => e.ev === 'ready', 120_000, 'ready')));
    const t0 = monoMs();
    for (const m of members) m.child.send('go');
    const first = await untilBalanced('the start');
    ctx.log(`  ${s.kind.name}: balanced ${round((first - t0) / 1000, 1)} s after all ${count} joined at once`);
    await sleep(SHARD_TIMING.retryPeriodMs);
    await untilBalanced('settling');
    session = await s.store.counter?.begin();

    // 1. At rest.
    const restS = ctx.plan.mode === 'quick' ? 3 : 10;
    const r0 = await requests();
    await sleep(restS * 1000);
    const r1 = await requests();
    if (!balanced()) throw new Error(`shards: ${shards} over ${count} moved while at rest`);
    const restSeconds = (r1.t - r0.t) / 1000;
    const settings = `${shards} shards, ${count} member processes; lease ${SHARD_TIMING.leaseDurationMs / 1000} s, renew deadline ${SHARD_TIMING.renewDeadlineMs / 1000} s, retry ${SHARD_TIMING.retryPeriodMs / 1000} s`;
    const common = { system: `baton-${s.kind.name}`, store: s.kind.name, leases: shards, settings };
    ctx.results.add({
      ...common,
      metric: 'shard_store_rps',
      unit: 'requests/s',
      value: round((r1.server - r0.server) / restSeconds, 1),
      method: `${session ? s.store.counter!.source : 'SQL statements the members ran (better-sqlite3 wrapper)'}, over ${round(restSeconds, 1)} s at rest`,
      detail: {
        phase: 'rest',
        storeCallsPerS: round((r1.calls - r0.calls) / restSeconds, 1),
        cpuPercentOfOneCore: round(((r1.cpuMs - r0.cpuMs) / (r1.t - r0.t)) * 100, 1),
        rssMbAllMembers: round(r1.rssMb, 0),
        perSecondByKind: perSecond(r0.byKind, r1.byKind, restSeconds),
        firstBalanceMs: round(first - t0, 0),
      },
    });
    ctx.log(`  baton-${s.kind.name}            shard_store_rps [at rest]: ${round((r1.server - r0.server) / restSeconds, 1)} requests/s (members' CPU ${round(((r1.cpuMs - r0.cpuMs) / (r1.t - r0.t)) * 100, 0)} % of one core)`);

    // 2. A join, then 3. a kill.
    const change = async (kind: 'join' | 'kill'): Promise<void> => {
      const before = owners();
      const beforeMembers = live().map((m) => m.identity).sort();
      let act: () => void;
      let minimum: number;
      let victim: Member | undefined;
      if (kind === 'join') {
        const joiner = spawnMember(members.length);
        await joiner.child.seen((e) => e.ev === 'ready', 120_000, 'ready');
        act = () => joiner.child.send('go');
        minimum = Math.floor(shards / (beforeMembers.length + 1));
      } else {
        // Not the newest member: a member that has been in the group since the start.
        victim = live()[1]!;
        minimum = victim.owned.size;
        act = () => {
          victim!.alive = false;
          victim!.child.proc.kill('SIGKILL');
        };
      }
      const a = await requests();
      const acquired0 = acquisitions;
      const shrunk0 = shrunkViews;
      const at = monoMs();
      act();
      const done = await untilBalanced(kind);
      const b = await requests();
      const after = owners();
      const afterMembers = live().map((m) => m.identity).sort();
      const moved = movedShards(before, after);
      const previous: ShardAssignment = { members: beforeMembers, owners: before.map((o) => beforeMembers.indexOf(o)) };
      const computed = movedShards(before, ownerNames(nextAssignment(group, shards, previous, afterMembers)));
      const modulo = movedShards(
        before.map((_, i) => beforeMembers[i % beforeMembers.length]!),
        after.map((_, i) => afterMembers[i % afterMembers.length]!),
      );
      const seconds = (b.t - a.t) / 1000;
      ctx.results.add({ ...common, metric: 'shard_rebalance_ms', unit: 'ms', value: round(done - at, 0), method: `${kind}: from ${kind === 'join' ? 'the member starting' : 'the SIGKILL'} to the line that left every shard owned by a live member and the loads balanced`, detail: { event: kind } });
      ctx.results.add({
        ...common,
        metric: 'shards_moved',
        unit: 'shards',
        value: moved,
        method: `${kind}: shards whose owner differs before and after; acquisitions = every acquire in between`,
        detail: { event: kind, minimum, acquisitions: acquisitions - acquired0, batonComputed: computed, modulo, releaseEverything: shards, membershipShrinksSeen: shrunkViews - shrunk0 },
      });
      ctx.results.add({
        ...common,
        metric: 'shard_store_rps',
        unit: 'requests/s',
        value: round((b.server - a.server) / seconds, 1),
        method: `${session ? s.store.counter!.source : 'SQL statements the members ran (better-sqlite3 wrapper)'}, during the ${kind} rebalance (${round(seconds, 1)} s)`,
        detail: { phase: kind, perSecondByKind: perSecond(a.byKind, b.byKind, seconds), storeCallsPerS: round((b.calls - a.calls) / seconds, 1), cpuPercentOfOneCore: round(((b.cpuMs - a.cpuMs) / (b.t - a.t)) * 100, 1) },
      });
      ctx.log(`  baton-${s.kind.name}            ${kind}: balanced in ${round(done - at, 0)} ms; moved ${moved} (minimum ${minimum}, computed ${computed}, modulo ${modulo}, release-everything ${shards}; ${acquisitions - acquired0} acquisitions; ${shrunkViews - shrunk0} shrinking membership views); ${round((b.server - a.server) / seconds, 1)} requests/s`);
    };
    await change('join');
    await sleep(SHARD_TIMING.retryPeriodMs);
    await change('kill');
  } finally {
    await session?.end();
    await Promise.all(members.map((m) => (m.alive ? m.child.stop(15_000) : m.child.kill())));
  }
}

async function countAll(ms: Member[]): Promise<Count[]> {
  return Promise.all(
    ms.map(async (m) => {
      const pending = m.child.next((e) => e.ev === 'count', 30_000, 'count');
      m.child.send('count');
      return { ...((await pending) as Count), identity: m.identity };
    }),
  );
}

/** perSecond is the busiest request kinds between two snapshots, per second. */
function perSecond(a: Counts, b: Counts, seconds: number): Record<string, number> {
  const d = diffCounts(a, b).byKind;
  return Object.fromEntries(Object.entries(d).sort((x, y) => y[1] - x[1]).slice(0, 6).map(([k, v]) => [k, round(v / seconds, 1)]));
}

/**
 * diagnosis sums what the members said in their last `count`, for a group that is slow to settle:
 * releases by reason (losses show as renew-deadline or lost), renewal batches and their leases,
 * store errors, CPU, and the worst event-loop delay any member had since its previous count.
 */
function diagnosis(counts: Count[]): string {
  const reasons: Record<string, number> = {};
  for (const c of counts) for (const [k, v] of Object.entries(c.releasedBy ?? {})) reasons[k] = (reasons[k] ?? 0) + v;
  const sum = (f: (c: Count) => number) => counts.reduce((n, c) => n + f(c), 0);
  const worst = counts.reduce((a, c) => (c.loopDelay?.maxMs ?? 0) > (a.loopDelay?.maxMs ?? 0) ? c : a, counts[0]!);
  const p99 = counts.map((c) => c.loopDelay?.p99Ms ?? 0).sort((a, b) => a - b);
  return (
    `releases so far ${JSON.stringify(reasons)}; ${sum((c) => c.renewBatches)} renewal batches carrying ${sum((c) => c.renewItems)} leases; ` +
    `${sum((c) => c.storeErrors)} store errors (${counts.find((c) => c.lastError)?.lastError ?? 'none'}); members' CPU ${round(sum((c) => c.cpuMs) / 1000, 1)} s so far; ` +
    `event-loop delay since the last look: median member's p99 ${round(p99[Math.floor(p99.length / 2)] ?? 0, 0)} ms, worst ${round(worst?.loopDelay?.maxMs ?? 0, 0)} ms (${worst?.identity})`
  );
}
