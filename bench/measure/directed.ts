/**
 * handover_gap_ms and handover_leaderless_ms — directed handover (core/handover.ts) beside
 * today's release-and-race, measured side by side in one run, rounds of the three interleaved:
 *
 * - `release`: `elector.stop()` on a leader with no candidate registry: release, the standby's
 *   notification, the standby's acquisition (what graceful_handover_ms times from stop()).
 * - `directed stop`: `elector.stop()` on a registered leader (`candidate: {}`): it asks the
 *   standby, waits for its acceptance, gives it the lease (new term), and the standby takes it.
 * - `directed handover()`: `leader.handover(standby)` — the preference rule's and the CLI's
 *   path: ask and accept happen while the leader still leads; it stops its work only when it
 *   sees the acceptance, then gives; the standby takes.
 *
 * Two figures per round, all stamps on this process's performance.now():
 * - the gap: the answer to the old leader's last successful write (the release, or the give) →
 *   the answer to the successor's first successful write of the new term (its acquisition, or
 *   its take) — what a store-side observer sees of the lease changing hands;
 * - leaderless: the old leader's `stopped` (its work ended) → the successor's `elected` (its
 *   work may start) — the time no work runs, as a fenced register would see it, give or take
 *   the work's own write latency.
 *
 * Default timing (15 s / 10 s / 2 s). Each variant keeps its own lock and handles (one per
 * elector); every round starts a fresh standby, as measure/handover.ts does. On a queue store
 * (etcd, ZooKeeper) the give is a release and the take a claim of the front (stamped when the
 * campaign answers), and a stop with one standby is a release to the next in line, so there is
 * no `directed stop` row; a store without a ledger has no registry, so none there either.
 */
import { randomBytes } from 'node:crypto';
import { LeaderElector } from '../../src/core/elector.js';
import { openStore } from '../../src/stores/registry.js';
import type { LeaseStore } from '../../src/core/store.js';
import { randomBetween, sleep, waitFor } from '../clock.js';
import { summaryFields } from '../results.js';
import { round, summarize } from '../stats.js';
import type { BenchContext, StoreUnderTest } from '../plan.js';

const TIMEOUT_MS = 40_000;
type Variant = 'release' | 'directed stop' | 'directed handover()';

/** Stamps of successful writes through one handle: when each answer came, and whom the record named. */
interface Stamp {
  atMs: number;
  holder: string | null;
  term: number;
}

/**
 * stamping wraps `store` so that every successful `write` is stamped on performance.now() when
 * answered — and on a queue store every campaign answered `ok` (a claim of the front, which on
 * etcd needs no write: the successor's first act of the new term).
 */
function stamping(store: LeaseStore, stamps: Stamp[]): LeaseStore {
  const stamp = <R extends { ok: boolean; record?: { holder: string | null; term: number } }>(result: R): R => {
    if (result.ok && result.record) stamps.push({ atMs: performance.now(), holder: result.record.holder, term: result.record.term });
    return result;
  };
  const write: LeaseStore['write'] = async (lock, expected, next) => stamp(await store.write(lock, expected, next));
  const q = store.queue;
  const queue: LeaseStore['queue'] = q && {
    campaign: async (...args) => stamp(await q.campaign(...args)),
    withdraw: (...args) => q.withdraw(...args),
    ...(q.requeue ? { requeue: async (...args: Parameters<NonNullable<typeof q.requeue>>) => stamp(await q.requeue!(...args)) } : {}),
  };
  return new Proxy(store, {
    get(target, key) {
      if (key === 'write') return write;
      if (key === 'queue') return queue;
      const v = Reflect.get(target, key, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/** One variant's lock: its handles (reused round-robin by its electors), its leader, its samples. */
class Lane {
  readonly lock = `directed-${randomBytes(4).toString('hex')}`;
  readonly gaps: number[] = [];
  readonly leaderless: number[] = [];
  readonly stops: number[] = [];
  leader?: LeaderElector;
  private next = 0;
  constructor(
    readonly variant: Variant,
    private readonly handles: LeaseStore[],
  ) {}

  make(): { elector: LeaderElector; stamps: Stamp[] } {
    const i = this.next++;
    const stamps: Stamp[] = [];
    const store = stamping(this.handles[i % this.handles.length]!, stamps);
    const elector = new LeaderElector({ store, lock: this.lock, identity: `${this.variant === 'release' ? 'r' : this.variant === 'directed stop' ? 's' : 'h'}${i}`, ...(this.variant === 'release' ? {} : { candidate: {} }) });
    elector.on('storeError', () => {});
    return { elector, stamps };
  }
}

/** measureDirectedHandover adds handover_gap_ms and handover_leaderless_ms rows for each variant on `s`. */
export async function measureDirectedHandover(ctx: BenchContext, s: StoreUnderTest): Promise<void> {
  const probe = await openStore(s.store.url);
  const queue = !!probe.queue;
  const ledger = !!probe.ledger;
  await probe.close();
  // On a queue store a stop with a single standby releases to it (the next in line): no `directed stop` there.
  const variants: Variant[] = ledger && !queue ? ['release', 'directed stop', 'directed handover()'] : ['release', 'directed handover()'];
  const handles: LeaseStore[] = [];
  const lanes: Lane[] = [];
  const stamps = new Map<LeaderElector, Stamp[]>();
  for (const v of variants) {
    const own: LeaseStore[] = [];
    for (let i = 0; i < 3; i++) own.push(await openStore(s.store.url));
    handles.push(...own);
    lanes.push(new Lane(v, own));
  }
  // A standing watch per handle, as in measure/handover.ts: the steady state, not a feed's start-up.
  const unwatch = handles.map((h) => h.watch?.(`directed-warm-${randomBytes(3).toString('hex')}`, () => {}));
  await sleep(500);
  const start = (lane: Lane) => {
    const { elector, stamps: st } = lane.make();
    stamps.set(elector, st);
    return elector.start();
  };
  try {
    for (const lane of lanes) {
      lane.leader = start(lane);
      await lane.leader.elected();
    }
    const rounds = s.kind.notifies ? ctx.plan.handovers : ctx.plan.pollingHandovers;
    for (let i = 1; i <= rounds; i++) {
      for (const lane of lanes) {
        const leader = lane.leader!;
        const standby = start(lane);
        await waitFor('the standby to see the leader', () => (standby.leader()?.holder === leader.identity ? true : undefined), TIMEOUT_MS);
        // The registry entry is written at start; a directed stop asks only a registered candidate.
        if (lane.variant !== 'release') await waitFor('the standby to register', async () => ((await leader.candidates()).some((c) => c.identity === standby.identity && !c.left) ? true : undefined), TIMEOUT_MS);
        await sleep(randomBetween(50, 100));
        let stoppedAt = NaN;
        leader.once('stopped', () => (stoppedAt = performance.now()));
        const elected = standby.elected();
        const t0 = performance.now();
        const done = lane.variant === 'directed handover()' ? leader.handover(standby.identity, { timeoutMs: TIMEOUT_MS }) : leader.stop();
        const timeout = sleep(TIMEOUT_MS).then(() => 'timeout' as const);
        if ((await Promise.race([elected, timeout])) === 'timeout') throw new Error(`bench: ${lane.variant} ${i} on ${s.kind.name} took over ${TIMEOUT_MS}ms`);
        const electedAt = performance.now();
        const outcome = await done;
        if (outcome && typeof outcome === 'object' && outcome.outcome !== 'handed') throw new Error(`bench: ${lane.variant} ${i} on ${s.kind.name}: ${outcome.outcome}`);
        const term = standby.term!;
        const oldLast = stamps.get(leader)!.at(-1)!;
        const newFirst = stamps.get(standby)!.find((x) => x.holder === standby.identity && x.term === term)!;
        lane.gaps.push(newFirst.atMs - oldLast.atMs);
        lane.leaderless.push(electedAt - stoppedAt);
        lane.stops.push(electedAt - t0);
        if (lane.variant === 'directed handover()') await leader.stop();
        stamps.delete(leader);
        lane.leader = standby;
      }
    }
  } finally {
    await Promise.all(lanes.map((l) => l.leader?.stop().catch(() => {})));
    for (const u of unwatch) u?.();
    await Promise.all(handles.map((h) => h.close()));
  }
  for (const lane of lanes) {
    const common = {
      system: `baton-${s.kind.name} (${lane.variant})`,
      store: s.kind.name,
      unit: 'ms',
      settings: `default timing (lease 15 s, renew deadline 10 s, retry 2 s); ${lane.variant === 'release' ? 'no registry' : "candidate: {} (registry refresh 15 s)"}${s.kind.notifies ? '' : '; no change feed: the standby polls every jittered retry period'}`,
      detail: { variant: lane.variant, fromCallP50Ms: round(summarize(lane.stops).p50, 3), fromCallP99Ms: round(summarize(lane.stops).p99, 3) },
    };
    ctx.results.add({
      ...common,
      metric: 'handover_gap_ms',
      ...summaryFields(summarize(lane.gaps)),
      method: "old leader's last successful write answered → successor's first successful write of the new term answered, one process, performance.now(); rounds of the variants interleaved",
    });
    ctx.results.add({
      ...common,
      metric: 'handover_leaderless_ms',
      ...summaryFields(summarize(lane.leaderless)),
      method: "old leader's 'stopped' (work ended) → successor's 'elected', one process, performance.now()",
    });
    ctx.log(`  ${s.kind.name} ${lane.variant}: gap p50 ${round(summarize(lane.gaps).p50, 2)} p99 ${round(summarize(lane.gaps).p99, 2)} ms; leaderless p50 ${round(summarize(lane.leaderless).p50, 2)} p99 ${round(summarize(lane.leaderless).p99, 2)} ms; call → elected p50 ${round(summarize(lane.stops).p50, 2)} ms`);
  }
}
