/**
 * The shard-mode checker on hand-written logs: two shards, each judged as a lock of its own. A
 * clean history passes; the same token accepted on one shard's register from a second process,
 * a shard that is never owned, and a shard left ownerless past the bound each fail, named by shard.
 * Writes of the same term to two different shards are not stale: each shard is its own register.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RunMeta } from '../../chaos/checker.js';
import type { CandidateEvent, HarnessEvent, RegisterEvent } from '../../chaos/events.js';
import { SHARD_DETECTION_SLACK, checkShards } from '../../chaos/shard-check.js';

const timing = { leaseDurationMs: 1000, renewDeadlineMs: 600, retryPeriodMs: 250 };
const meta: RunMeta = { store: 'test', seed: 1, candidates: 2, timing, faultKinds: ['kill'], command: 'npm run chaos -- …', shards: 2 };

/** A shard held from `at` to `end`, renewed every 250 ms (deadline 600 ms after each renewal start). */
function holds(shard: number, term: number, at: number, end: number, stopped = true): CandidateEvent[] {
  const out: CandidateEvent[] = [{ ev: 'elected', t: at, wall: 1e12 + at, term, acquireStart: at - 1, deadline: at - 1 + 600, shard }];
  for (let r = at + 250; r + 600 < end + 600 && r < end; r += 250) out.push({ ev: 'renewed', t: r + 1, term, rttMs: 1, deadline: Math.min(r + 600, end), shard });
  if (stopped) out.push({ ev: 'stopped', t: end, wall: 1e12 + end, term, reason: 'released', shard });
  return out;
}
const accepted = (key: string, token: number, from: string, t0: number, t1: number): RegisterEvent => ({ ev: 'accepted', token, from, t0, t1, n: 10, key });
const harness = (end: number, extra: HarnessEvent[] = []): HarnessEvent[] => [{ ev: 'window', t: 0, edge: 'start', hostSkewMs: 0 }, ...extra, { ev: 'window', t: end, edge: 'end' }];
const sorted = (events: CandidateEvent[]) => events.sort((a, b) => a.t - b.t);

/** c0 owns both shards; it is killed at 2000; c1 takes shard 0 at 2000 + `takeover0` and shard 1 at 2000 + `takeover1`. */
function run(takeover0: number, takeover1: number) {
  const h = harness(6000, [
    { ev: 'inject', t: 2000, id: 1, kind: 'kill', variant: 'SIGKILL', target: 'c0.1', holdMs: 500 },
    { ev: 'heal', t: 2500, id: 1, kind: 'kill' },
  ]);
  const candidates = new Map<string, CandidateEvent[]>([
    ['c0.1', sorted([...holds(0, 1, 10, 2000, false), ...holds(1, 1, 10, 2000, false)])],
    ['c1.1', sorted([...holds(0, 2, 2000 + takeover0, 6000, false), ...holds(1, 2, 2000 + takeover1, 6000, false)])],
  ]);
  const register: RegisterEvent[] = [
    accepted('s0', 1, 'c0.1', 20, 1990),
    accepted('s1', 1, 'c0.1', 20, 1990),
    accepted('s0', 2, 'c1.1', 2000 + takeover0 + 5, 5990),
    accepted('s1', 2, 'c1.1', 2000 + takeover1 + 5, 5990),
  ];
  return { h, candidates, register };
}

test('shard checker: a clean kill and takeover of two shards passes, per shard', () => {
  const { h, candidates, register } = run(1050, 1100);
  const r = checkShards(meta, h, register, candidates);
  assert.deepEqual(r.violations, []);
  assert.equal(r.shards!.length, 2);
  assert.deepEqual(r.shards!.map((s) => [s.shard, s.elections, s.acceptedStaleWrites]), [[0, 2, 0], [1, 2, 0]]);
  assert.equal(r.acceptedWrites, 40);
  assert.equal(r.boundMs, Math.round((1000 + 250 + 1 + SHARD_DETECTION_SLACK * 250) * 10) / 10);
  assert.deepEqual(r.gaps.map((g) => [g.shard, g.ms]), [[0, 1050], [1, 1100]]);
});

test('shard checker: a term reused on one shard is an accepted stale write of that shard', () => {
  const { h, candidates, register } = run(1050, 1100);
  register.push(accepted('s1', 2, 'c0.1', 2100, 2200));
  const r = checkShards(meta, h, register, candidates);
  assert.equal(r.acceptedStaleWrites, 10);
  assert.deepEqual(r.shards!.map((s) => s.acceptedStaleWrites), [0, 10]);
  assert.ok(r.violations.some((v) => v.startsWith('shard 1: 10 stale write(s)')), r.violations.join('\n'));
});

test('shard checker: a shard owned again too late, or never owned, fails by name', () => {
  const late = run(1050, 2000);
  const r = checkShards(meta, late.h, late.register, late.candidates);
  assert.deepEqual(r.gapsOverBound.map((g) => g.shard), [1]);
  assert.ok(r.violations.some((v) => v.startsWith('shard 1: 1 leaderless gap')), r.violations.join('\n'));
  const never = checkShards({ ...meta, shards: 3 }, late.h, late.register, late.candidates);
  assert.ok(never.violations.includes('shard 2: never owned in the window'), never.violations.join('\n'));
});
