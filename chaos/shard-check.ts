/**
 * The checker for shard mode (`--shards N`): every shard is a lock of its own with a fenced
 * register of its own, so each shard is judged exactly as an ordinary run's single lock is
 * (checker.ts): no accepted stale write, terms that only grow, never two processes whose
 * isLeader() is true for the shard at once, and no ownerless stretch longer than the bound once
 * the fault that caused it healed. A shard that never had an owner in the window fails too.
 *
 * The bound is one for the whole run: the store's round trip is measured over every shard's
 * renewals (a first pass over the unsplit logs), and the bound is lease + retry period + RTT
 * p99 plus SHARD_DETECTION_SLACK (see there).
 */
import type { CandidateEvent, HarnessEvent, RegisterEvent } from './events.js';
import { check, readRunLogs, type ChaosResult, type RunMeta, type ShardVerdict } from './checker.js';

/**
 * SHARD_DETECTION_SLACK is how many retry periods a shard's move may take beyond a single lock's
 * failover: an heir may take a dead member's shard only once the assignment says so, and a member
 * is found dead from its heartbeat seen unchanged for a lease duration — a heartbeat observed on
 * one retry-period tick and checked on the next, so found up to one retry period later than a
 * lease seen expiring by a watching standby.
 */
export const SHARD_DETECTION_SLACK = 1;

/** checkShardRun reads the logs in `dir` and judges a shard-mode run. */
export function checkShardRun(dir: string, meta: RunMeta): ChaosResult {
  const { harness, register, candidates } = readRunLogs(dir);
  return checkShards(meta, harness, register, candidates, dir);
}

/** checkShards is checkShardRun on logs already read. */
export function checkShards(
  meta: RunMeta,
  harness: HarnessEvent[],
  register: RegisterEvent[],
  candidates: Map<string, CandidateEvent[]>,
  logDir = '',
): ChaosResult {
  const shards = meta.shards ?? 0;
  // Pass 1, unsplit: the faults, whether they bit, and the round trip over every renewal.
  const whole = check(meta, harness, register, candidates, logDir);
  const boundMs = round1(whole.boundMs + SHARD_DETECTION_SLACK * meta.timing.retryPeriodMs);
  const verdicts: ShardVerdict[] = [];
  const parts: { shard: number; r: ChaosResult }[] = [];
  for (let shard = 0; shard < shards; shard++) {
    const key = `s${shard}`;
    const mine = new Map<string, CandidateEvent[]>();
    for (const [identity, events] of candidates) {
      mine.set(identity, events.filter((e) => !isLeadership(e) || e.shard === shard));
    }
    const r = check(meta, harness, register.filter((e) => e.key === key), mine, logDir, { boundMs });
    parts.push({ shard, r });
    verdicts.push({
      shard,
      elections: r.elections,
      acceptedWrites: r.acceptedWrites,
      acceptedStaleWrites: r.acceptedStaleWrites,
      rejectedStaleWrites: r.rejectedStaleWrites,
      maxOwnerlessMs: r.maxLeaderlessMs,
      gapsOverBound: r.gapsOverBound.length,
    });
  }
  const sum = (f: (r: ChaosResult) => number) => parts.reduce((n, p) => n + f(p.r), 0);
  const gaps = parts.flatMap((p) => p.r.gaps.map((g) => ({ ...g, shard: p.shard }))).sort((a, b) => a.startMs - b.startMs);
  const gapsOverBound = gaps.filter((g) => g.overBound);
  const violations: string[] = [];
  for (const p of parts) {
    // Fault checks were judged once, on the unsplit logs.
    for (const v of p.r.violations) if (!/did not take effect/.test(v)) violations.push(`shard ${p.shard}: ${v}`);
    if (p.r.elections === 0) violations.push(`shard ${p.shard}: never owned in the window`);
  }
  violations.push(...whole.violations.filter((v) => /did not take effect/.test(v)));
  const byFault: ChaosResult['believedOverlapByFault'] = {};
  for (const p of parts) for (const [k, v] of Object.entries(p.r.believedOverlapByFault)) byFault[k as keyof typeof byFault] = round1((byFault[k as keyof typeof byFault] ?? 0) + v!);
  const spans = (f: (r: ChaosResult) => ChaosResult['believedOverlaps']) =>
    parts.flatMap((p) => f(p.r).map((s) => ({ ...s, who: s.who.map((w) => `s${p.shard}:${w}`) }))).sort((a, b) => b.ms - a.ms).slice(0, 20);
  return {
    ...whole,
    elections: sum((r) => r.elections),
    failovers: sum((r) => r.failovers),
    holderChanges: sum((r) => r.holderChanges),
    acceptedWrites: sum((r) => r.acceptedWrites),
    acceptedStaleWrites: sum((r) => r.acceptedStaleWrites),
    staleWriteSamples: parts.flatMap((p) => p.r.staleWriteSamples.map((w) => ({ ...w, from: `s${p.shard}:${w.from}` }))).slice(0, 20),
    rejectedStaleWrites: sum((r) => r.rejectedStaleWrites),
    termViolations: parts.flatMap((p) => p.r.termViolations.map((v) => ({ ...v, identity: `s${p.shard}:${v.identity}` }))),
    minHandoverMarginMs: Math.min(...parts.map((p) => p.r.minHandoverMarginMs)),
    handoversTooEarly: parts.flatMap((p) => p.r.handoversTooEarly.map((h) => ({ ...h, from: `s${p.shard}:${h.from}` }))),
    believedOverlapMs: round1(sum((r) => r.believedOverlapMs)),
    believedOverlapByFault: byFault,
    believedOverlaps: spans((r) => r.believedOverlaps),
    leaseOverlapMs: round1(sum((r) => r.leaseOverlapMs)),
    leaseOverlaps: spans((r) => r.leaseOverlaps),
    boundMs,
    maxLeaderlessMs: Math.max(0, ...gaps.map((g) => g.afterHealMs)),
    gaps,
    gapsOverBound,
    violations,
    ok: violations.length === 0,
    shards: verdicts,
  };
}

function isLeadership(e: CandidateEvent): e is Extract<CandidateEvent, { ev: 'elected' | 'renewed' | 'stopped' }> {
  return e.ev === 'elected' || e.ev === 'renewed' || e.ev === 'stopped';
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}
