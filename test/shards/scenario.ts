/**
 * The shard-group scenario with real processes, run by processes.test.ts (SQLite) and
 * processes-redis.test.ts (a network store): 4 members and 16 shards; kill -9 of one moves
 * exactly its 4 shards to the others within the bound (5/5/6); the same identity started again
 * gets 4 back; SIGTERM of one moves its shards at once. Each member logs every acquire and
 * release with CLOCK_MONOTONIC time, and the test checks that no shard ever had two owners.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, test } from 'node:test';
import { ROOT } from '../harness/cli.js';

/** shardScenario registers the scenario's test against the store at `url`. */
export function shardScenario(label: string, url: string): void {
  const LEASE_MS = 1500;
  const RETRY_MS = 200;
  type Line = { event: string; member: string; pid: number; shard?: number; term?: number; ns: string; message?: string };
  const lines: Line[] = [];
  const procs = new Map<string, ChildProcess>();
  /** pid of a killed process → when it was killed. */
  const killedAt = new Map<number, bigint>();
  after(() => {
    for (const p of procs.values()) p.kill('SIGKILL');
  });

  function start(identity: string): void {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/shard-member.ts', url, 'orders', '16', identity], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    child.stdout!.on('data', (b: Buffer) => {
      buf += b.toString();
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        lines.push(JSON.parse(buf.slice(0, i)) as Line);
        buf = buf.slice(i + 1);
      }
    });
    procs.set(identity, child);
  }

  /** owners replays the log: shard → member, as each member last said. */
  function owners(): Map<number, string> {
    const out = new Map<number, string>();
    for (const l of lines) {
      if (l.event === 'acquired') out.set(l.shard!, `${l.member}@${l.pid}`);
      if (l.event === 'released' && out.get(l.shard!) === `${l.member}@${l.pid}`) out.delete(l.shard!);
    }
    for (const [s, who] of out) if (killedAt.has(Number(who.split('@')[1]))) out.delete(s);
    for (const [s, who] of out) out.set(s, who.split('@')[0]!);
    return out;
  }
  const counts = () => {
    const c = new Map<string, number>();
    for (const m of owners().values()) c.set(m, (c.get(m) ?? 0) + 1);
    return [...c.values()].sort((a, b) => a - b).join(',');
  };
  async function until(what: string, check: () => boolean, ms = 20_000): Promise<void> {
    const end = Date.now() + ms;
    while (!check()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; owners: ${JSON.stringify([...owners()])}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  test(`4 processes, 16 shards on ${label}: kill -9, restart, SIGTERM; never two owners of a shard`, async () => {
    for (const id of ['a', 'b', 'c', 'd']) start(id);
    await until('4 shards each', () => counts() === '4,4,4,4' && owners().size === 16);
    const before = owners();

    // kill -9 of d: its 4 shards are owned again within lease + a few retry periods, nothing else moves.
    const killNs = process.hrtime.bigint();
    killedAt.set(procs.get('d')!.pid!, killNs);
    procs.get('d')!.kill('SIGKILL');
    procs.delete('d');
    await until('5/5/6 after the kill', () => counts() === '5,5,6' && owners().size === 16, 15_000);
    const takeovers = lines.filter((l) => l.event === 'acquired' && BigInt(l.ns) > killNs).map((l) => Number(BigInt(l.ns) - killNs) / 1e6);
    const slowest = Math.max(...takeovers);
    // The bound: a lease seen unchanged from the last renewal, the detection within a retry
    // period, and scheduling slack for a loaded machine.
    assert.ok(slowest <= LEASE_MS + 3 * RETRY_MS + 1000, `slowest takeover ${slowest.toFixed(0)} ms after the kill`);
    const afterKill = owners();
    for (const [s, m] of before) if (m !== 'd') assert.equal(afterKill.get(s), m, `shard ${s} moved from ${m} though it lived`);

    // d again, same identity: 4 each, and only 4 shards move (to d).
    start('d');
    await until('4 each after the restart', () => counts() === '4,4,4,4' && owners().size === 16);
    const afterRestart = owners();
    assert.equal([...afterKill].filter(([s, m]) => afterRestart.get(s) !== m).length, 4);

    // SIGTERM of a: its shards move at once, without waiting out a lease.
    const termNs = process.hrtime.bigint();
    procs.get('a')!.kill('SIGTERM');
    await until('5/5/6 after SIGTERM', () => counts() === '5,5,6' && owners().size === 16 && !lines.some((l) => l.event === 'acquired' && l.member === 'a' && BigInt(l.ns) > termNs));
    const moves = lines.filter((l) => l.event === 'acquired' && BigInt(l.ns) > termNs).map((l) => Number(BigInt(l.ns) - termNs) / 1e6);
    assert.ok(Math.max(...moves) < LEASE_MS, `a clean stop moved shards after ${Math.max(...moves).toFixed(0)} ms (a lease is ${LEASE_MS})`);
    procs.delete('a');

    // No shard ever had two owners: per shard, each acquisition comes after the previous owner released (or was killed).
    assert.deepEqual(lines.filter((l) => l.event === 'error'), []);
    const open = new Map<number, { member: string; pid: number; term: number }>();
    for (const l of [...lines].sort((x, y) => (BigInt(x.ns) < BigInt(y.ns) ? -1 : 1))) {
      if (l.event === 'acquired') {
        const prev = open.get(l.shard!);
        if (prev && !(killedAt.has(prev.pid) && killedAt.get(prev.pid)! < BigInt(l.ns))) {
          assert.fail(`shard ${l.shard}: ${l.member} acquired (term ${l.term}) while ${prev.member} held it (term ${prev.term})`);
        }
        if (prev) assert.ok(l.term! > prev.term, `shard ${l.shard}: term ${l.term} after ${prev.term}`);
        open.set(l.shard!, { member: l.member, pid: l.pid, term: l.term! });
      } else if (l.event === 'released' && open.get(l.shard!)?.pid === l.pid) {
        open.delete(l.shard!);
      }
    }
  });
}
