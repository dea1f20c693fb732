/**
 * crash_failover_ms — SIGKILL of the leader *process*, until another process reports
 * `elected`. Three candidate processes (bench/candidate.ts) per store, short timing (lease
 * 2 s, renew deadline 1.5 s, retry 250 ms; etcd rounds leases up to whole seconds). Both ends
 * are stamped on CLOCK_MONOTONIC, shared by every process on the host.
 *
 * Two figures per kill: from the kill, and from the start of the leader's last write sent
 * before the kill (the latest moment the server can have extended its lease; a renewal in
 * flight at the kill counts). The target is lease + 1 RTT + 20 ms from that last write.
 *
 * Kills land a random 0.2–0.7 s after the last failover settled, so at a random phase of the
 * 250 ms renewal cycle. A replacement process is started at the kill but campaigns only once
 * the failover is over ("hold"), so it cannot take part in the race it would distort.
 */
import { randomBytes } from 'node:crypto';
import { monoMs, randomBetween, sleep } from '../clock.js';
import { spawnBench, type BenchChild, type ChildEvent } from '../proc.js';
import { summaryFields } from '../results.js';
import { round, summarize } from '../stats.js';
import type { BenchContext, StoreUnderTest } from '../plan.js';

/** FAILOVER_TIMING is the short timing crash-failover runs use. */
export const FAILOVER_TIMING = Object.freeze({ leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 250 });
const PROCESSES = 3;

interface Candidate {
  child: BenchChild;
  identity: string;
  leading: boolean;
  lastWriteT: number;
}

/** measureFailover adds crash_failover_ms and crash_failover_from_renewal_ms rows for `s`. */
export async function measureFailover(ctx: BenchContext, s: StoreUnderTest): Promise<void> {
  const lock = `failover-${randomBytes(4).toString('hex')}`;
  let serial = 0;
  const all: Candidate[] = [];
  const spawnCandidate = (hold: boolean): Candidate => {
    const identity = `f${serial++}`;
    const child = spawnBench('candidate.ts', {
      BENCH_CANDIDATE: JSON.stringify({ storeUrl: s.store.url, lock, identity, ...FAILOVER_TIMING, hold }),
    });
    const c: Candidate = { child, identity, leading: false, lastWriteT: NaN };
    child.on((e: ChildEvent) => {
      if (e.ev === 'write') c.lastWriteT = e.t;
      else if (e.ev === 'elected') c.leading = true;
      else if (e.ev === 'stopped') c.leading = false;
    });
    all.push(c);
    return c;
  };
  const fromKill: number[] = [];
  const fromRenewal: number[] = [];
  try {
    let live = Array.from({ length: PROCESSES }, () => spawnCandidate(false));
    await Promise.all(live.map((c) => c.child.seen((e) => e.ev === 'ready', 60_000, 'ready')));
    for (let k = 0; k < ctx.plan.kills; k++) {
      // Everyone settled: one leader, the others have seen it.
      const leader = await settled(live);
      await sleep(randomBetween(200, 700));
      const others = live.filter((c) => c !== leader);
      const electedElsewhere = Promise.race(others.map((c) => c.child.next((e) => e.ev === 'elected', 30_000, 'elected after the kill').then((e) => e)));
      const replacement = spawnCandidate(true);
      const tKill = monoMs();
      await leader.child.kill('SIGKILL');
      const lastWrite = leader.lastWriteT;
      const elected = await electedElsewhere;
      fromKill.push(elected.t - tKill);
      fromRenewal.push(elected.t - lastWrite);
      await replacement.child.seen((e) => e.ev === 'ready', 60_000, 'ready');
      replacement.child.send('go');
      live = [...others, replacement];
    }
  } finally {
    await Promise.all(all.map((c) => c.child.stop(4000)));
  }
  const timing = `lease ${FAILOVER_TIMING.leaseDurationMs} ms, renew deadline ${FAILOVER_TIMING.renewDeadlineMs} ms, retry ${FAILOVER_TIMING.retryPeriodMs} ms`;
  const common = { system: `baton-${s.kind.name}`, store: s.kind.name, unit: 'ms', settings: timing } as const;
  ctx.results.add({
    ...common,
    metric: 'crash_failover_ms',
    ...summaryFields(summarize(fromKill)),
    samples: fromKill.map((x) => round(x)),
    method: `SIGKILL of the leader process → another of ${PROCESSES} processes prints 'elected' (CLOCK_MONOTONIC on both ends)`,
    detail: { leaseDurationMs: FAILOVER_TIMING.leaseDurationMs },
  });
  ctx.results.add({
    ...common,
    metric: 'crash_failover_from_renewal_ms',
    ...summaryFields(summarize(fromRenewal)),
    samples: fromRenewal.map((x) => round(x)),
    method: "from the start of the killed leader's last write sent before the kill → 'elected'",
    detail: { leaseDurationMs: FAILOVER_TIMING.leaseDurationMs },
  });
}

/**
 * settled waits until exactly one live candidate leads and every other one has seen it lead —
 * or, on a queue store (etcd), waits in the line: there a waiter watches only the entry just
 * ahead of it (etcd's election rule, no thundering herd), so one two places back hears of a new
 * leader only when its predecessor goes, and its last `leader` event may name a dead one.
 */
async function settled(live: Candidate[]): Promise<Candidate> {
  const until = performance.now() + 60_000;
  for (;;) {
    const leaders = live.filter((c) => c.leading);
    if (leaders.length === 1) {
      const leader = leaders[0]!;
      const waiting = (c: Candidate) => {
        const holder = lastLeaderEvent(c.child)?.holder;
        if (holder === leader.identity) return true;
        const queued = c.child.events.find((e) => e.ev === 'ready')?.queue === true;
        return queued && typeof holder === 'string' && holder !== c.identity && c.child.events.some((e) => e.ev === 'started');
      };
      const seen = live.every((c) => c === leader || waiting(c));
      if (seen) return leader;
    }
    if (performance.now() > until) throw new Error('bench: failover: candidates did not settle on one leader within 60 s');
    await sleep(10);
  }
}

function lastLeaderEvent(child: BenchChild): ChildEvent | undefined {
  for (let i = child.events.length - 1; i >= 0; i--) if (child.events[i]!.ev === 'leader') return child.events[i];
  return undefined;
}
