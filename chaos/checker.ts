/**
 * The checker: reads a run's logs (chaos/events.ts) and decides whether baton kept its promise.
 *
 * Hard failures (the run exits non-zero):
 * - an accepted stale write: the register accepted a token older than one it had accepted, or
 *   the same token from a second process (a reused term) — fencing did not protect downstream;
 * - a term that did not grow: an acquisition whose term is not above every earlier one;
 * - lease overlap: two processes for which isLeader() was true at once (each leadership's
 *   deadline, as the elector computed it, against the next one's election) — baton promises
 *   a leader stops on its own clock before anyone else can acquire;
 * - a leaderless gap longer than leaseDuration + retryPeriod + store RTT once its fault healed;
 * - a fault that demonstrably did not take effect (clock jump not seen, stall not run).
 *
 * Reported, not failed: the time two processes *believed* they led (from `elected` until they
 * noticed the end) — a frozen or stalled process cannot notice, and fencing makes that safe.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { FAULT_KINDS, readJsonl, type CandidateEvent, type FaultKind, type HarnessEvent, type RegisterEvent } from './events.js';
import { clip, holes, overlaps, percentile, totalMs, type Interval, type Span } from './intervals.js';
import { offsetMs } from './faults.js';
import { leadershipsFrom } from './leaderships.js';
import { replayRegister } from './register-replay.js';
import type { ChaosTiming } from './stores.js';

/** RunMeta describes a run; saved as run.json beside its logs. */
export interface RunMeta {
  store: string;
  seed: number;
  candidates: number;
  timing: ChaosTiming;
  faultKinds: FaultKind[];
  command: string;
  /** Shard mode: the group's shard count (each shard judged as a lock of its own: shard-check.ts). */
  shards?: number;
  /** Where the processes ran (absent: loopback). */
  net?: 'loopback' | 'netns';
}

/** FaultRecord is one injected fault with its timing (ms relative to the window start). */
export interface FaultRecord {
  id: number;
  kind: FaultKind;
  variant: string;
  target?: string;
  atMs: number;
  healedAtMs?: number;
  /**
   * The trial's unavailability: from the fault (a store fault: from its heal, since nobody can
   * lead while the store is down) to the first write the register accepted from the next leader
   * (a token above the one it held at the fault); when no new leader wrote before the next fault,
   * the leaderless time charged to this fault (0 if the leader rode it out).
   */
  unavailableMs?: number;
  /** Who wrote next, and where the time went: fault → acquiring write sent, the acquiring call, elected → first accepted write. */
  next?: { identity: string; term: number; toAcquireMs: number; acquireMs: number; toWriteMs: number };
}

/** GapRecord is one leaderless stretch and the fault it is charged to. */
export interface GapRecord {
  startMs: number;
  /** Total leaderless time. */
  ms: number;
  /** Leaderless time counted from when the fault allowed a leader again (store faults: the heal). */
  afterHealMs: number;
  fault?: { id: number; kind: FaultKind; variant: string };
  overBound: boolean;
  /** Shard mode: the shard left without an owner. */
  shard?: number;
}

/** ChaosResult is the checker's verdict; the JSON a run writes with --json. */
export interface ChaosResult {
  store: string;
  seed: number;
  candidates: number;
  timing: ChaosTiming;
  durationMs: number;
  elections: number;
  failovers: number;
  holderChanges: number;
  acceptedWrites: number;
  acceptedStaleWrites: number;
  staleWriteSamples: { token: number; from: string; newest: number; newestFrom: string; t: number; atMs: number; n: number }[];
  rejectedStaleWrites: number;
  termViolations: { identity: string; term: number; previousMax: number; atMs: number }[];
  /** Smallest time between a leader's end (deadline, stop or death) and the next acquiring write; must be positive. */
  minHandoverMarginMs: number;
  handoversTooEarly: { from: string; to: string; marginMs: number; atMs: number }[];
  believedOverlapMs: number;
  /** believedOverlapMs split by the kind of the latest fault injected before each overlap began. */
  believedOverlapByFault: Partial<Record<FaultKind | 'none', number>>;
  believedOverlaps: { startMs: number; ms: number; who: string[] }[];
  leaseOverlapMs: number;
  leaseOverlaps: { startMs: number; ms: number; who: string[] }[];
  rttMs: { p50: number; p99: number; max: number; samples: number };
  /** The store's round trip over every renewal, faults included (a slow link's cell is bounded with it). */
  rttAllMs: { p50: number; p99: number; max: number; samples: number };
  boundMs: number;
  maxLeaderlessMs: number;
  gaps: GapRecord[];
  gapsOverBound: GapRecord[];
  faults: Record<FaultKind, number>;
  faultLog: FaultRecord[];
  faultsNotSeen: string[];
  violations: string[];
  ok: boolean;
  command: string;
  logDir: string;
  /** Shard mode: the verdict shard by shard. */
  shards?: ShardVerdict[];
}

/** ShardVerdict is one shard's part of a shard-mode verdict. */
export interface ShardVerdict {
  shard: number;
  elections: number;
  acceptedWrites: number;
  acceptedStaleWrites: number;
  rejectedStaleWrites: number;
  /** Longest time without an owner after the fault that caused it healed. */
  maxOwnerlessMs: number;
  gapsOverBound: number;
}

/** checkRun reads the logs in `dir` and returns the verdict (of an ordinary run; shard runs: shard-check.ts). */
export function checkRun(dir: string, meta: RunMeta): ChaosResult {
  const { harness, register, candidates } = readRunLogs(dir);
  return check(meta, harness, register, candidates, dir);
}

/** readRunLogs reads a run's three kinds of log. */
export function readRunLogs(dir: string): { harness: HarnessEvent[]; register: RegisterEvent[]; candidates: Map<string, CandidateEvent[]> } {
  const harness = readJsonl<HarnessEvent>(join(dir, 'harness.jsonl'));
  const register = readJsonl<RegisterEvent>(join(dir, 'register.jsonl'));
  const candidates = new Map<string, CandidateEvent[]>();
  for (const name of readdirSync(dir)) {
    const m = /^(c\d+\.\d+)\.jsonl$/.exec(name);
    if (m) candidates.set(m[1]!, readJsonl<CandidateEvent>(join(dir, name)));
  }
  return { harness, register, candidates };
}

/** check is checkRun on logs already read. */
export function check(
  meta: RunMeta,
  harness: HarnessEvent[],
  register: RegisterEvent[],
  candidates: Map<string, CandidateEvent[]>,
  logDir = '',
  options: { boundMs?: number } = {},
): ChaosResult {
  const { timing } = meta;
  const windowStart = harness.find((e) => e.ev === 'window' && e.edge === 'start')?.t ?? 0;
  // A run still going (or one that crashed) has no end mark: judge it up to its last harness line.
  const windowEnd = harness.find((e) => e.ev === 'window' && e.edge === 'end')?.t ?? harness.reduce((m, e) => Math.max(m, e.t), windowStart);
  const rel = (t: number) => Math.round(t - windowStart);
  const violations: string[] = [];

  // 1. Leaderships from the candidates' own logs; a killed process believes nothing after death.
  const { leaderships, renewals } = leadershipsFrom(candidates, harness, windowEnd);
  const inWindow = leaderships.filter((l) => l.electedAt <= windowEnd).sort((a, b) => a.electedAt - b.electedAt);

  // 2. Failovers: every election after the first is a new leadership (a new term).
  let holderChanges = 0;
  for (let i = 1; i < inWindow.length; i++) if (inWindow[i]!.identity !== inWindow[i - 1]!.identity) holderChanges++;

  // 3. Terms must grow with every acquisition, in the order the acquiring writes were sent.
  //    And each acquiring write must start after the previous leader stopped — by its deadline,
  //    its own stop, or its death: the handover margin must be positive.
  const termViolations: ChaosResult['termViolations'] = [];
  let maxTerm = -Infinity;
  let minHandoverMarginMs = Infinity;
  const handoversTooEarly: ChaosResult['handoversTooEarly'] = [];
  const byAcquisition = [...leaderships].sort((a, b) => a.acquireStart - b.acquireStart);
  byAcquisition.forEach((l, i) => {
    if (l.term <= maxTerm) termViolations.push({ identity: l.identity, term: l.term, previousMax: maxTerm, atMs: rel(l.electedAt) });
    maxTerm = Math.max(maxTerm, l.term);
    const prev = byAcquisition[i - 1];
    if (!prev || prev.electedAt > windowEnd) return;
    // On a queue store the winning call began while the candidate waited in line (the server
    // made it leader during the call): judge the handover from when the call returned.
    const margin = (timing.queue ? l.electedAt : l.acquireStart) - Math.min(prev.deadline, prev.believedEnd);
    minHandoverMarginMs = Math.min(minHandoverMarginMs, margin);
    if (margin < 0) handoversTooEarly.push({ from: `${prev.identity}#${prev.term}`, to: `${l.identity}#${l.term}`, marginMs: round1(margin), atMs: rel(l.acquireStart) });
  });
  if (termViolations.length) violations.push(`${termViolations.length} acquisition(s) got a term that was not above every earlier term`);
  if (handoversTooEarly.length) violations.push(`${handoversTooEarly.length} acquisition(s) started before the previous leader had stopped`);

  // 4. The register, replayed: an accepted token below the newest, or equal but from another writer.
  const { acceptedWrites, acceptedStaleWrites, rejectedStaleWrites, stale } = replayRegister(register);
  const staleWriteSamples = stale.slice(0, 20).map((w) => ({ ...w, atMs: rel(w.t) }));
  if (acceptedStaleWrites) violations.push(`${acceptedStaleWrites} stale write(s) accepted by the fenced register`);

  // 5. Belief versus isLeader(): who thought it led, and for whom isLeader() was actually true.
  const believed: Interval[] = clip(inWindow.map((l) => ({ start: l.electedAt, end: l.believedEnd, who: `${l.identity}#${l.term}` })), windowStart, windowEnd);
  const effective: Interval[] = clip(
    inWindow.map((l) => ({ start: l.electedAt, end: Math.min(l.deadline, l.believedEnd), who: `${l.identity}#${l.term}` })),
    windowStart,
    windowEnd,
  );
  const believedSpans = overlaps(believed);
  const leaseSpans = overlaps(effective);
  const leaseOverlapMs = totalMs(leaseSpans);
  if (leaseSpans.length) violations.push(`isLeader() was true in two processes at once for ${leaseOverlapMs.toFixed(1)}ms`);
  const spanOut = (spans: Span[]) =>
    spans
      .map((s) => ({ startMs: rel(s.start), ms: round1(s.end - s.start), who: s.who }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 20);

  // 6. Faults, and the store's round trip measured outside them.
  const faultLog: FaultRecord[] = [];
  // A renewal is not a fair RTT sample while the store is broken or its own process is the target.
  const faultWindows: { start: number; end: number; target?: string }[] = [];
  const injects = harness.filter((e): e is Extract<HarnessEvent, { ev: 'inject' }> => e.ev === 'inject');
  const heals = new Map<number, number>();
  const healDetails = new Map<number, string | undefined>();
  for (const e of harness) if (e.ev === 'heal') (heals.set(e.id, e.t), healDetails.set(e.id, e.detail));
  for (const f of injects) {
    const healed = heals.get(f.id);
    faultLog.push({ id: f.id, kind: f.kind, variant: f.variant, target: f.target, atMs: rel(f.t), healedAtMs: healed === undefined ? undefined : rel(healed) });
    faultWindows.push({ start: f.t, end: (healed ?? windowEnd) + timing.leaseDurationMs, target: f.kind === 'store' ? undefined : f.target });
  }
  const quiet = renewals.filter(
    (r) => !faultWindows.some((w) => (w.target === undefined || w.target === r.identity) && r.t >= w.start && r.t - r.rttMs <= w.end),
  );
  const rttSamples = (quiet.length >= 10 ? quiet : renewals).map((r) => r.rttMs);
  const rttMs = {
    p50: round1(percentile(rttSamples, 50)),
    p99: round1(percentile(rttSamples, 99)),
    max: round1(Math.max(...rttSamples, 0)),
    samples: rttSamples.length,
  };
  const allSamples = renewals.map((r) => r.rttMs);
  const rttAllMs = { p50: round1(percentile(allSamples, 50)), p99: round1(percentile(allSamples, 99)), max: round1(Math.max(...allSamples, 0)), samples: allSamples.length };
  // A standby that polls (no notifications) may wait up to pollMs between looks, not retryPeriod.
  // A new leader that waits out a predecessor which did not release (etcd clusters) adds that wait.
  const boundMs = options.boundMs ?? round1(timing.leaseDurationMs + (timing.pollMs ?? timing.retryPeriodMs) + (timing.predecessorWaitMs ?? 0) + (Number.isFinite(rttMs.p99) ? rttMs.p99 : 0));

  // 7. Leaderless gaps. While the store itself is broken nobody can lead, so a gap that a store
  //    fault overlaps is charged to it and timed from its heal; any other gap is charged to the
  //    latest fault injected before it began and timed from its start.
  const firstElected = inWindow[0]?.electedAt ?? windowStart;
  const gaps: GapRecord[] = [];
  for (const h of holes(effective, Math.max(windowStart, firstElected), windowEnd)) {
    const storeFault = injects.filter((i) => i.kind === 'store' && i.t < h.end && (heals.get(i.id) ?? windowEnd) > h.start).pop();
    const f = storeFault ?? [...injects].reverse().find((i) => i.t <= h.start + 1);
    const from = storeFault ? Math.max(h.start, heals.get(storeFault.id) ?? h.end) : h.start;
    const afterHealMs = round1(Math.max(0, h.end - from));
    gaps.push({
      startMs: rel(h.start),
      ms: round1(h.end - h.start),
      afterHealMs,
      fault: f ? { id: f.id, kind: f.kind, variant: f.variant } : undefined,
      overBound: afterHealMs > boundMs,
    });
  }
  const gapsOverBound = gaps.filter((g) => g.overBound);
  if (gapsOverBound.length) violations.push(`${gapsOverBound.length} leaderless gap(s) longer than the ${boundMs}ms bound after their fault healed`);

  // 7b. Each fault as a trial: from the fault to the next leader's first accepted write.
  const accepted = register.filter((e): e is Extract<RegisterEvent, { ev: 'accepted' }> => e.ev === 'accepted' && e.key === undefined).sort((a, b) => a.t0 - b.t0);
  injects.forEach((f, i) => {
    const record = faultLog[i]!;
    const from = f.kind === 'store' ? heals.get(f.id) ?? windowEnd : f.t;
    const until = injects[i + 1]?.t ?? windowEnd;
    let held = -Infinity;
    for (const a of accepted) if (a.t0 <= f.t) held = Math.max(held, a.token);
    const first = accepted.find((a) => a.token > held && a.t0 > f.t && a.t0 < until);
    if (first) {
      record.unavailableMs = round1(Math.max(0, first.t0 - from));
      const l = leaderships.find((x) => x.identity === first.from && x.term === first.token);
      if (l) record.next = { identity: l.identity, term: l.term, toAcquireMs: round1(l.acquireStart - from), acquireMs: round1(l.electedAt - l.acquireStart), toWriteMs: round1(first.t0 - l.electedAt) };
    } else {
      record.unavailableMs = round1(gaps.filter((g) => g.fault?.id === f.id).reduce((sum, g) => sum + g.afterHealMs, 0));
    }
  });

  // 8. Did the faults bite? A clock jump must show in the target's wall samples; a stall must
  //    have run; while the store is broken, no renewal sent after the break may succeed.
  const faultsNotSeen: string[] = [];
  const hostSkew = harness.find((e): e is Extract<HarnessEvent, { ev: 'window' }> => e.ev === 'window' && e.edge === 'start')?.hostSkewMs;
  for (const f of injects) {
    const events = f.target ? candidates.get(f.target) ?? [] : [];
    if (f.kind === 'clock' && f.jumpMs !== undefined && hostSkew !== undefined) {
      const want = hostSkew + offsetMs(f.variant.split(' → ')[1] ?? '+0');
      const seen = events.some((e) => e.ev === 'wall' && e.t > f.t && e.t < f.t + 6000 && Math.abs(e.skewMs - want) < 1500);
      if (!seen) faultsNotSeen.push(`clock fault #${f.id} (${f.variant}) on ${f.target}: no wall-clock sample near the new offset`);
    } else if (f.kind === 'stall') {
      if (!events.some((e) => e.ev === 'stall' && e.t >= f.t - 5 && e.t < f.t + 2000)) faultsNotSeen.push(`stall #${f.id} on ${f.target}: the candidate never logged it`);
    } else if (f.kind === 'handover') {
      // The named standby must have led next, with a higher term, by its own log.
      const detail = healDetails.get(f.id) ?? 'never answered';
      const ledNext = events.some((e) => e.ev === 'elected' && e.t > f.t);
      if (!detail.startsWith('handed') || !ledNext) faultsNotSeen.push(`handover #${f.id} ${f.variant}: ${detail}${ledNext ? '' : '; the target never logged an election'}`);
    } else if (f.kind === 'partition' || f.kind === 'link' || f.kind === 'load') {
      // Kernel-level faults (--net netns) report what their rules did; a load fault its hogs' CPU.
      const detail = healDetails.get(f.id) ?? '';
      const dropped = Number(/dropped (\d+)/.exec(detail)?.[1] ?? NaN);
      const delayed = Number(/delayed (\d+)/.exec(detail)?.[1] ?? NaN);
      const cpu = Number(/cpu (\d+) ms/.exec(detail)?.[1] ?? NaN);
      const netns = /dropped|delayed/.test(detail);
      if (f.kind === 'load' && !(cpu >= 0.5 * f.holdMs)) faultsNotSeen.push(`load #${f.id}: the hogs ran ${cpu} ms of CPU in a ${Math.round(f.holdMs)} ms hold (less than half a core)`);
      if (f.kind === 'link' && f.variant.startsWith('delay') && !(delayed > 0)) faultsNotSeen.push(`link #${f.id} (${f.variant}) on ${f.target}: no packet was delayed`);
      if (f.kind !== 'load' && (f.kind === 'link' ? f.variant.startsWith('loss') : netns) && !(dropped > 0)) faultsNotSeen.push(`${f.kind} #${f.id} (${f.variant}) on ${f.target}: no packet was dropped`);
    } else if (f.kind === 'store' && !f.variant.startsWith('member-')) {
      // (A member fault on a cluster is meant to be survived: renewals through the other
      // members are the point, so it is not required to stop them.)
      const healed = heals.get(f.id) ?? windowEnd;
      const through = renewals.filter((r) => r.t - r.rttMs > f.t + STORE_FAULT_SLACK_MS && r.t < healed - STORE_FAULT_SLACK_MS);
      if (through.length) faultsNotSeen.push(`store fault #${f.id} (${f.variant}): ${through.length} renewal(s) sent after the break succeeded before the heal`);
    }
  }
  if (faultsNotSeen.length) violations.push(`${faultsNotSeen.length} fault(s) did not take effect`);

  const faults = Object.fromEntries(FAULT_KINDS.map((k) => [k, injects.filter((f) => f.kind === k).length])) as Record<FaultKind, number>;
  return {
    store: meta.store,
    seed: meta.seed,
    candidates: meta.candidates,
    timing,
    durationMs: Math.round(windowEnd - windowStart),
    elections: inWindow.length,
    failovers: Math.max(0, inWindow.length - 1),
    holderChanges,
    acceptedWrites,
    acceptedStaleWrites,
    staleWriteSamples,
    rejectedStaleWrites,
    termViolations,
    minHandoverMarginMs: Number.isFinite(minHandoverMarginMs) ? round1(minHandoverMarginMs) : 0,
    handoversTooEarly,
    believedOverlapMs: round1(totalMs(believedSpans)),
    believedOverlapByFault: byFault(believedSpans, injects),
    believedOverlaps: spanOut(believedSpans),
    leaseOverlapMs: round1(leaseOverlapMs),
    leaseOverlaps: spanOut(leaseSpans),
    rttMs,
    rttAllMs,
    boundMs,
    maxLeaderlessMs: Math.max(0, ...gaps.map((g) => g.afterHealMs)),
    gaps,
    gapsOverBound,
    faults,
    faultLog,
    faultsNotSeen,
    violations,
    ok: violations.length === 0,
    command: meta.command,
    logDir,
  };
}

/** byFault charges each span to the kind of the latest fault injected before it began. */
function byFault(spans: Span[], injects: { t: number; kind: FaultKind }[]): Partial<Record<FaultKind | 'none', number>> {
  const out: Partial<Record<FaultKind | 'none', number>> = {};
  for (const s of spans) {
    let kind: FaultKind | 'none' = 'none';
    for (const f of injects) if (f.t <= s.start) kind = f.kind;
    out[kind] = round1((out[kind] ?? 0) + (s.end - s.start));
  }
  return out;
}

/**
 * A renewal this close to a store fault's edges proves nothing: just after the break it may
 * have been served before the fault bit, and a restarted server answers a little before the
 * harness marks the heal.
 */
const STORE_FAULT_SLACK_MS = 250;

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}
