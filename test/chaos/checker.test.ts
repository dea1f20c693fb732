/**
 * The chaos checker on hand-written logs: it must pass a clean history and catch each kind of
 * violation it exists for (a checker that cannot fail would prove nothing). The logs are the
 * same records real runs write (chaos/events.ts); no process runs here.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { check, type RunMeta } from '../../chaos/checker.js';
import type { CandidateEvent, HarnessEvent, RegisterEvent } from '../../chaos/events.js';

const meta: RunMeta = {
  store: 'test',
  seed: 1,
  candidates: 2,
  timing: { leaseDurationMs: 1000, renewDeadlineMs: 600, retryPeriodMs: 250 },
  faultKinds: ['pause'],
  command: 'npm run chaos -- …',
};

/** A leadership in a candidate log: elected at `at`, last renewed at `renewAt` (deadline 600 ms later). */
function leads(term: number, at: number, renewAt: number, stoppedAt?: number): CandidateEvent[] {
  const out: CandidateEvent[] = [
    { ev: 'elected', t: at, wall: 1e12 + at, term, acquireStart: at - 1, deadline: at - 1 + 600 },
    { ev: 'renewed', t: renewAt + 1, term, rttMs: 1, deadline: renewAt + 600 },
  ];
  if (stoppedAt !== undefined) out.push({ ev: 'stopped', t: stoppedAt, wall: 1e12 + stoppedAt, term, reason: 'renew-deadline' });
  return out;
}

const window = (end: number): HarnessEvent[] => [
  { ev: 'window', t: 0, edge: 'start', hostSkewMs: 0 },
  { ev: 'window', t: end, edge: 'end' },
];
const accepted = (token: number, from: string, t0: number, t1: number, n = 10): RegisterEvent => ({ ev: 'accepted', token, from, t0, t1, n });

/** A clean history: c0 leads, is paused past its deadline, c1 takes over; c0 wakes and notices. */
function cleanRun() {
  const harness: HarnessEvent[] = [
    ...window(5000),
    { ev: 'inject', t: 1050, id: 1, kind: 'pause', variant: 'SIGSTOP', target: 'c0.1', holdMs: 1500 },
    { ev: 'heal', t: 2550, id: 1, kind: 'pause' },
  ];
  const candidates = new Map<string, CandidateEvent[]>([
    ['c0.1', leads(1, 10, 1000, 2560)],
    ['c1.1', leads(2, 2100, 4990)],
  ]);
  const register: RegisterEvent[] = [accepted(1, 'c0.1', 12, 1040), { ev: 'rejected', t: 2555, token: 1, from: 'c0.1', newest: 2 }, accepted(2, 'c1.1', 2102, 4990)];
  return { harness, candidates, register };
}

test('checker: a clean failover passes, and counts what it saw', () => {
  const { harness, candidates, register } = cleanRun();
  const r = check(meta, harness, register, candidates);
  assert.deepEqual(r.violations, []);
  assert.equal(r.ok, true);
  assert.equal(r.failovers, 1);
  assert.equal(r.acceptedWrites, 20);
  assert.equal(r.acceptedStaleWrites, 0);
  assert.equal(r.rejectedStaleWrites, 1);
  assert.equal(r.leaseOverlapMs, 0);
  assert.equal(r.minHandoverMarginMs, 2099 - 1600);
  // c0 believed it led until it woke (2560) although its deadline passed at 1600; c1 led from 2100.
  assert.equal(r.believedOverlapMs, 460);
  // Leaderless from c0's deadline (1600) to c1's election (2100), charged to the pause.
  assert.equal(r.gaps.length, 1);
  assert.equal(r.gaps[0]!.ms, 500);
  assert.equal(r.gaps[0]!.fault?.kind, 'pause');
  assert.equal(r.maxLeaderlessMs, 500);
  assert.equal(r.faults.pause, 1);
});

test('checker: an accepted write older than the newest token is a violation', () => {
  const { harness, candidates, register } = cleanRun();
  register.push(accepted(1, 'c0.1', 4995, 4996, 3));
  const r = check(meta, harness, register, candidates);
  assert.equal(r.acceptedStaleWrites, 3);
  assert.equal(r.ok, false);
  assert.match(r.violations.join('\n'), /stale write/);
});

test('checker: the same token accepted from a second process is a violation (a reused term)', () => {
  const { harness, candidates, register } = cleanRun();
  register.push(accepted(2, 'c0.1', 4995, 4996, 2));
  const r = check(meta, harness, register, candidates);
  assert.equal(r.acceptedStaleWrites, 2);
  assert.equal(r.ok, false);
});

test('checker: an acquisition whose term is not above the earlier ones is a violation', () => {
  const { harness, candidates, register } = cleanRun();
  candidates.set('c1.1', leads(1, 2100, 4990));
  const r = check(meta, harness, register, candidates);
  assert.equal(r.termViolations.length, 1);
  assert.equal(r.termViolations[0]!.identity, 'c1.1');
  assert.equal(r.ok, false);
});

test('checker: isLeader() true in two processes at once is a violation', () => {
  const { harness, candidates, register } = cleanRun();
  // c1 elected at 1300 while c0's deadline (renewed at 1000) runs to 1600.
  candidates.set('c1.1', leads(2, 1300, 4990));
  const r = check(meta, harness, register, candidates);
  assert.equal(r.leaseOverlapMs, 300);
  assert.equal(r.handoversTooEarly.length, 1);
  assert.equal(r.ok, false);
  assert.match(r.violations.join('\n'), /isLeader\(\)/);
});

test('checker: an acquiring write sent before the old leader stopped is a violation, even if it returned later', () => {
  const { harness, candidates, register } = cleanRun();
  // c1's acquiring write left at 1500, before c0's deadline at 1600; it was elected at 1700.
  const late = leads(2, 1700, 4990);
  late[0] = { ev: 'elected', t: 1700, wall: 1e12 + 1700, term: 2, acquireStart: 1500, deadline: 2100 };
  candidates.set('c1.1', late);
  const r = check(meta, harness, register, candidates);
  assert.equal(r.leaseOverlapMs, 0);
  assert.deepEqual(r.handoversTooEarly, [{ from: 'c0.1#1', to: 'c1.1#2', marginMs: -100, atMs: 1500 }]);
  assert.equal(r.minHandoverMarginMs, -100);
  assert.equal(r.ok, false);
});

test('checker: a leaderless gap over lease + retry + RTT is a violation; a store outage counts from its heal', () => {
  const { harness, candidates, register } = cleanRun();
  candidates.set('c1.1', leads(2, 3500, 4990));
  const late = check(meta, harness, register, candidates);
  assert.equal(late.gapsOverBound.length, 1);
  assert.equal(late.gapsOverBound[0]!.afterHealMs, 1900);
  assert.equal(late.ok, false);

  // The same gap while the store itself was down until 3000: only 500 ms after the heal.
  harness.splice(2, 2, { ev: 'inject', t: 1050, id: 1, kind: 'store', variant: 'freeze', holdMs: 1950 }, { ev: 'heal', t: 3000, id: 1, kind: 'store' });
  const stored = check(meta, harness, register, candidates);
  assert.deepEqual(stored.gapsOverBound, []);
  assert.equal(stored.gaps[0]!.ms, 1900);
  assert.equal(stored.gaps[0]!.afterHealMs, 500);

  // A store outage that began during a gap (after the pause) still stops the clock until its heal.
  harness.splice(2, 2, { ev: 'inject', t: 1050, id: 1, kind: 'pause', variant: 'SIGSTOP', target: 'c0.1', holdMs: 500 }, { ev: 'heal', t: 1550, id: 1, kind: 'pause' });
  harness.push({ ev: 'inject', t: 1700, id: 2, kind: 'store', variant: 'restart', holdMs: 1200 }, { ev: 'heal', t: 3000, id: 2, kind: 'store' });
  const overlapped = check(meta, harness, register, candidates);
  assert.deepEqual(overlapped.gapsOverBound, []);
  assert.equal(overlapped.gaps[0]!.fault?.kind, 'store');
  assert.equal(overlapped.gaps[0]!.afterHealMs, 500);
});

test('checker: a killed process believes nothing after the SIGKILL, however late its exit is heard of', () => {
  const { harness, candidates, register } = cleanRun();
  candidates.set('c0.1', leads(1, 10, 1000)); // no `stopped`: SIGKILLed
  harness.splice(2, 2, { ev: 'inject', t: 1100, id: 1, kind: 'kill', variant: 'SIGKILL', target: 'c0.1', holdMs: 500 });
  harness.push({ ev: 'exit', t: 2300, identity: 'c0.1', signal: 'SIGKILL' });
  const r = check(meta, harness, register, candidates);
  assert.equal(r.believedOverlapMs, 0);
  assert.equal(r.ok, true);
  // Without the kill record, the late exit would count as belief until 2300.
  harness.splice(2, 1);
  assert.equal(check(meta, harness, register, candidates).believedOverlapMs, 200);
});

test('checker: a clock fault must show in the target\'s wall-clock samples', () => {
  const { harness, candidates, register } = cleanRun();
  harness.push({ ev: 'inject', t: 3000, id: 2, kind: 'clock', variant: '+0 → +1h', target: 'c1.1', holdMs: 2500, jumpMs: 3_600_000 });
  const unseen = check(meta, harness, register, candidates);
  assert.equal(unseen.faultsNotSeen.length, 1);
  assert.equal(unseen.ok, false);
  candidates.get('c1.1')!.push({ ev: 'wall', t: 4800, skewMs: 3_600_010 });
  const seen = check(meta, harness, register, candidates);
  assert.deepEqual(seen.faultsNotSeen, []);
});

test('checker: a store fault that renewals got through did not take effect', () => {
  const { harness, candidates, register } = cleanRun();
  harness.push({ ev: 'inject', t: 3000, id: 2, kind: 'store', variant: 'freeze', holdMs: 1500 }, { ev: 'heal', t: 4500, id: 2, kind: 'store' });
  const bit = check(meta, harness, register, candidates);
  assert.deepEqual(bit.faultsNotSeen, []);
  // c1 renewed from 3500 to 3502, in the middle of the outage: the store was not broken.
  candidates.get('c1.1')!.push({ ev: 'renewed', t: 3502, term: 2, rttMs: 2, deadline: 4100 });
  const missed = check(meta, harness, register, candidates);
  assert.equal(missed.faultsNotSeen.length, 1);
  assert.match(missed.faultsNotSeen[0]!, /store fault #2 \(freeze\)/);
  assert.equal(missed.ok, false);
});
