/**
 * `baton shards` as an operator runs it: four instances over one SQLite file, 16 shards, one
 * child process per owned shard. Each child logs its start and stop with CLOCK_MONOTONIC time;
 * the test checks 4 children each, 5/5/6 after a kill -9 (nothing else moved), 4 each after the
 * same identity comes back, an immediate move on SIGTERM, and that no shard ever had two
 * children running at once. `status --group --json` and the sidecar's /shards agree.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { BatonProcess, ROOT, TempDir, cleanEnv, runCli, waitFor } from '../harness/cli.js';

const dir = new TempDir();
const log = dir.join('children.log');
writeFileSync(log, '');
const env = cleanEnv(dir.path, { BATON_STORE: dir.sqlite('shards.db'), LOG: log });
const LEASE_MS = 3000;
const TIMING = ['--lease-duration', `${LEASE_MS}ms`, '--renew-deadline', '2000ms', '--retry-period', '300ms'];
const procs = new Map<string, BatonProcess>();
after(async () => {
  await Promise.all([...procs.values()].map((p) => p.kill()));
  dir.remove();
});

function start(identity: string): void {
  procs.set(identity, new BatonProcess(['shards', '--group', 'orders', '--shards', '16', '--identity', identity, ...TIMING, '--', process.execPath, `${ROOT}/test/fixtures/shard-child.mjs`], { env }));
}
type Entry = { what: string; shard: number; term: number; ns: bigint; identity: string; pid: number };
const entries = (): Entry[] =>
  readFileSync(log, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [what, shard, term, ns, identity, pid] = l.split(' ');
      return { what: what!, shard: Number(shard), term: Number(term), ns: BigInt(ns!), identity: identity!, pid: Number(pid) };
    });
/** running: shard → identity of the child running it now (from the log). */
function running(): Map<number, string> {
  const out = new Map<number, string>();
  for (const e of entries()) {
    if (e.what === 'start') out.set(e.shard, e.identity);
    else if (out.get(e.shard) === e.identity) out.delete(e.shard);
  }
  return out;
}
const counts = () => {
  const c = new Map<string, number>();
  for (const m of running().values()) c.set(m, (c.get(m) ?? 0) + 1);
  return [...c.values()].sort((a, b) => a - b).join(',');
};

test('baton shards: 4 instances, kill -9, restart, SIGTERM; one child per shard at any time', async () => {
  for (const id of ['a', 'b', 'c', 'd']) start(id);
  await waitFor('4 children each', () => counts() === '4,4,4,4' && running().size === 16, 30_000);
  const before = running();

  const status = await runCli(['status', '--group', 'orders', '--json'], { env });
  assert.equal(status.code, 0, status.stderr);
  const view = JSON.parse(status.stdout) as { shards: number; assignment: { shard: number; owner: string | null }[] };
  assert.equal(view.shards, 16);
  assert.deepEqual(new Map(view.assignment.map((a) => [a.shard, a.owner])), before);

  // d's children at the kill: the watchdog ends them when d's channel closes, perhaps with
  // SIGKILL (no "stop" line), so the moment they are seen gone stands in for their end.
  const orphans = [...running().entries()].filter(([, m]) => m === 'd').map(([s]) => entries().filter((e) => e.shard === s && e.what === 'start').pop()!);
  procs.get('d')!.child.kill('SIGKILL');
  procs.delete('d');
  await waitFor("d's children to be gone", () => orphans.every((o) => !existsSync(`/proc/${o.pid}`)), 10_000, 5);
  const orphansGoneNs = process.hrtime.bigint();
  // d's watchdog stops its children at d's deadline; the others take the shards after the lease.
  await waitFor('5/5/6 after kill -9', () => counts() === '5,5,6' && running().size === 16, 20_000);
  const afterKill = running();
  for (const [s, m] of before) if (m !== 'd') assert.equal(afterKill.get(s), m, `shard ${s} moved from ${m}`);

  start('d');
  await waitFor('4 each after d is back', () => counts() === '4,4,4,4' && running().size === 16, 30_000);

  const termAt = process.hrtime.bigint();
  procs.get('a')!.child.kill('SIGTERM');
  const exit = await procs.get('a')!.waitForExit(20_000);
  procs.delete('a');
  assert.ok(exit.code === 0 || exit.code === 143, `baton shards exited ${exit.code}: ${exit.stderr}`);
  await waitFor('5/5/6 after SIGTERM', () => counts() === '5,5,6' && running().size === 16, 20_000);
  const moved = entries().filter((e) => e.what === 'start' && e.ns > termAt).map((e) => Number(e.ns - termAt) / 1e6);
  assert.ok(Math.max(...moved) < LEASE_MS, `a clean stop took ${Math.max(...moved).toFixed(0)} ms to move shards (lease ${LEASE_MS} ms)`);

  // Never two children of one shard at once, and terms only grow.
  const open = new Map<number, Entry>();
  const ended = [...orphans.map((o) => ({ ...o, what: 'stop', ns: orphansGoneNs }))];
  for (const e of [...entries(), ...ended].sort((x, y) => (x.ns < y.ns ? -1 : 1))) {
    const prev = open.get(e.shard);
    if (e.what === 'start') {
      assert.ok(!prev, `shard ${e.shard}: ${e.identity} started (term ${e.term}) while ${prev?.identity}'s child (term ${prev?.term}) ran`);
      open.set(e.shard, e);
    } else if (prev && prev.pid === e.pid) open.delete(e.shard);
  }
  const terms = new Map<number, number>();
  for (const e of entries().filter((x) => x.what === 'start')) {
    assert.ok(e.term >= (terms.get(e.shard) ?? 0), `shard ${e.shard}: term went back`);
    terms.set(e.shard, e.term);
  }
});
