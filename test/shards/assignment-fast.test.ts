/**
 * nextAssignment places free shards best-pair-first without building the list of every (shard,
 * member) pair (src/shards/assignment.ts, placeBestFirst). Members that run different versions of
 * baton must still compute the same assignment, so the fast placement must give exactly what
 * the plain definition gives: here the definition is written out the slow way (all pairs, one
 * sort) and both are compared on seeded random groups — fresh, after joins and leaves, with
 * more members than shards — and on a 10,000-shard group.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hash32, mix32, nextAssignment, type ShardAssignment } from '../../src/shards/assignment.js';

/** reference is the assignment rule as docs/shards.md states it, computed the slow, obvious way. */
function reference(group: string, shards: number, previous: ShardAssignment | null, live: readonly string[]): ShardAssignment {
  const members = [...new Set(live)].sort();
  const owners = new Array<number>(shards).fill(-1);
  if (members.length === 0) return { members, owners };
  const seeds = members.map((m) => hash32(`${group}\u0000${m}`));
  const score = (s: number, m: number) => mix32(mix32(s + 0x9e3779b9) ^ seeds[m]!);
  const held: number[][] = members.map(() => []);
  for (let s = 0; s < shards; s++) {
    const m = members.indexOf(previous?.members[previous.owners[s] ?? -1] ?? '\u0000');
    if (m >= 0) held[m]!.push(s);
  }
  const quota = members.map(() => Math.floor(shards / members.length));
  let extra = shards % members.length;
  for (const m of members.map((_, i) => i).sort((a, b) => held[b]!.length - held[a]!.length || seeds[a]! - seeds[b]! || a - b)) if (extra-- > 0) quota[m]!++;
  const load = members.map(() => 0);
  members.forEach((_, m) => {
    for (const s of [...held[m]!].sort((a, b) => score(b, m) - score(a, m) || a - b).slice(0, quota[m])) {
      owners[s] = m;
      load[m]!++;
    }
  });
  const pairs: [number, number, number][] = [];
  for (let s = 0; s < shards; s++) if (owners[s] === -1) for (let m = 0; m < members.length; m++) if (load[m]! < quota[m]!) pairs.push([score(s, m), s, m]);
  pairs.sort((a, b) => b[0] - a[0] || a[1] - b[1] || a[2] - b[2]);
  for (const [, s, m] of pairs) {
    if (owners[s] !== -1 || load[m]! >= quota[m]!) continue;
    owners[s] = m;
    load[m]!++;
  }
  return { members, owners };
}

/** mulberry32: a seeded generator, so a failure can be replayed. */
function seeded(seed: number): (k: number) => number {
  let a = seed >>> 0;
  return (k) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * k);
  };
}

test('nextAssignment equals the plain definition on 2,000 seeded random groups', () => {
  const rnd = seeded(20261124);
  for (let i = 0; i < 2000; i++) {
    const group = `g${rnd(4)}`;
    const shards = 1 + rnd(i % 20 === 0 ? 2000 : 150);
    const pick = (n: number) => Array.from({ length: n }, () => `m${rnd(40)}`);
    const previous = i % 4 === 0 ? null : reference(group, shards, null, pick(1 + rnd(25)));
    const live = pick(1 + rnd(25));
    assert.deepEqual(nextAssignment(group, shards, previous, live), reference(group, shards, previous, live), `case ${i}: ${shards} shards, ${live.length} members`);
  }
});

test('nextAssignment equals the plain definition for 10,000 shards: 50 members from scratch, one joins, one leaves', () => {
  const members = Array.from({ length: 50 }, (_, i) => `member-${i}`);
  const first = nextAssignment('big', 10_000, null, members);
  assert.deepEqual(first, reference('big', 10_000, null, members));
  const joined = [...members, 'joiner'];
  assert.deepEqual(nextAssignment('big', 10_000, first, joined), reference('big', 10_000, first, joined));
  const left = members.slice(1);
  assert.deepEqual(nextAssignment('big', 10_000, first, left), reference('big', 10_000, first, left));
});
