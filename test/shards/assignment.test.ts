import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assignShards, heirShards, movedShards, nextAssignment, ownerNames } from '../../src/shards/assignment.js';

const members = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `m${i + from}`);
const loads = (owners: readonly string[]) => {
  const out = new Map<string, number>();
  for (const m of owners) out.set(m, (out.get(m) ?? 0) + 1);
  return [...out.values()].sort((a, b) => a - b);
};

describe('shard assignment', () => {
  test('16 shards over 4 members: 4 each', () => {
    assert.deepEqual(loads(assignShards('g', 16, members(4))), [4, 4, 4, 4]);
  });

  test('the same on every member: independent of the order members are listed in', () => {
    assert.deepEqual(assignShards('g', 64, ['c', 'a', 'b', 'd']), assignShards('g', 64, ['d', 'b', 'a', 'c', 'a']));
  });

  test('a member leaving moves exactly its own shards, spread 5/5/6; rejoining moves exactly 4 back', () => {
    const four = nextAssignment('g', 16, null, members(4));
    const three = nextAssignment('g', 16, four, members(3));
    const before = ownerNames(four);
    const after = ownerNames(three);
    assert.deepEqual(loads(after), [5, 5, 6]);
    assert.equal(movedShards(before, after), 4);
    for (let s = 0; s < 16; s++) if (before[s] !== 'm3') assert.equal(after[s], before[s], `shard ${s} moved though its owner stayed`);
    const again = ownerNames(nextAssignment('g', 16, three, members(4)));
    assert.deepEqual(loads(again), [4, 4, 4, 4]);
    assert.equal(movedShards(after, again), 4);
    assert.equal(again.filter((m) => m === 'm3').length, 4);
  });

  test('1,000 shards over 20 members: joins and leaves move the minimum, far fewer than modulo or release-all', () => {
    const n = 1000;
    let a = nextAssignment('big', n, null, members(20));
    const modulo = (ms: string[]) => Array.from({ length: n }, (_, s) => ms[s % ms.length]!);
    const joined = nextAssignment('big', n, a, [...members(20), 'new']);
    const moved = movedShards(ownerNames(a), ownerNames(joined));
    // Only the shards the joiner takes move, and it takes its quota.
    assert.equal(moved, ownerNames(joined).filter((m) => m === 'new').length);
    assert.ok(moved <= Math.ceil(n / 21), `join moved ${moved}`);
    const moduloMoved = movedShards(modulo(members(20)), modulo([...members(20), 'new']));
    assert.ok(moved * 10 < moduloMoved, `moved ${moved} vs modulo ${moduloMoved}`);
    a = joined;
    const left = nextAssignment('big', n, a, [...members(20).slice(1), 'new']);
    assert.equal(movedShards(ownerNames(a), ownerNames(left)), ownerNames(a).filter((m) => m === 'm0').length);
    assert.ok(Math.max(...loads(ownerNames(left))) - Math.min(...loads(ownerNames(left))) <= 1);
  });

  test('heirs: each shard has exactly one heir, and it is the member that gets the shard when its owner leaves', () => {
    const ms = members(5);
    const a = nextAssignment('g', 40, null, ms);
    const heirOf = new Map<number, string>();
    for (const m of ms) for (const s of heirShards('g', 40, a, m)) {
      assert.ok(!heirOf.has(s), `shard ${s} has two heirs`);
      heirOf.set(s, m);
    }
    assert.equal(heirOf.size, 40);
    const without = ownerNames(nextAssignment('g', 40, a, ms.filter((m) => m !== 'm2')));
    for (let s = 0; s < 40; s++) if (ownerNames(a)[s] === 'm2') assert.equal(without[s], heirOf.get(s));
  });

  test('edge cases: no members, one member, more members than shards', () => {
    assert.deepEqual(ownerNames(nextAssignment('g', 2, null, [])), ['', '']);
    assert.deepEqual(assignShards('g', 3, ['solo']), ['solo', 'solo', 'solo']);
    assert.deepEqual(loads(assignShards('g', 3, members(5))), [1, 1, 1]);
  });
});
