import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { BatonProcess, TempDir, childCommand, cleanEnv, delay, monoNs, pidAlive, readChildLog, waitFor } from '../../harness/cli.js';
import { ZooKeeperServer } from '../../../infra/servers/index.js';
import { ZooKeeperStore } from '../../../src/stores/zookeeper/index.js';
import { CuratorPeer, curatorAvailable } from './curator-peer.js';

// Real Apache Curator LeaderLatch participants (Debian's Curator 5.4 jars, run by Java) and real
// `baton run` processes on ONE latch path of a real ZooKeeper: one election. Leadership passes
// from Curator to baton and back, under SIGTERM and kill -9, and never overlaps (CLOCK_MONOTONIC
// times from both sides). Needs the build (bin/baton.js), javac and the Curator jars.
const available = curatorAvailable();
const server = available ? await new ZooKeeperServer().start() : undefined;
const dir = new TempDir();
const peers: CuratorPeer[] = [];
const batons: BatonProcess[] = [];
after(async () => {
  for (const p of peers) p.signal('SIGKILL');
  for (const b of batons) await b.kill();
  dir.remove();
  await server?.stop();
});

/** Interval is one leadership, in CLOCK_MONOTONIC ns, widened outward to whole ms on Curator's side. */
interface Interval {
  who: string;
  from: bigint;
  to: bigint;
}

test('zookeeper + Curator LeaderLatch: one election, leadership crosses both ways under SIGTERM and kill -9, never overlapping', { skip: !available && 'javac or the Curator jars are missing' }, async () => {
  const root = '/interop';
  const lock = `latch-${process.pid}`;
  const latchPath = `${root}/${lock}`;
  const log = dir.join('children.log');
  const env = cleanEnv(dir.path, { CHILD_LOG: log });
  const lease = 2000;
  const curator = (id: string) => {
    const p = new CuratorPeer(server!.connectString, latchPath, id, lease);
    peers.push(p);
    return p;
  };
  const baton = (id: string) => {
    const b = new BatonProcess(
      ['run', '--store', server!.url(root), '--lock', lock, '--identity', id, '--lease-duration', `${lease}ms`, '--renew-deadline', '1500ms', '--retry-period', '250ms', '--', ...childCommand()],
      { env },
    );
    batons.push(b);
    return b;
  };
  const starts = () => readChildLog(log).filter((l) => l.kind === 'start');
  const store = ZooKeeperStore.fromUrl(server!.url(root));
  after(() => store.close());
  const raw = (await import('node-zookeeper-client' as string)).default.createClient(server!.connectString);
  raw.connect();
  after(() => raw.close());
  const line = async () => (await store.list()).find((r) => r.lock === lock);

  // 1. The line: Curator c1 (leads), baton b1, Curator c2, baton b2, Curator c3 — each joins after the one before.
  const c1 = curator('c1');
  await waitFor('c1 to lead', () => c1.has('leader'), 30_000);
  const b1 = baton('b1');
  await delay(1500);
  const c2 = curator('c2');
  await waitFor('c2 to start', () => c2.has('started'), 30_000);
  await delay(500);
  const b2 = baton('b2');
  await delay(1500);
  const c3 = curator('c3');
  await waitFor('c3 to start', () => c3.has('started'), 30_000);
  await delay(500);
  assert.equal((await line())?.holder, 'c1', 'baton reads the Curator leader as the holder');
  assert.equal(starts().length, 0, 'no baton child runs while a Curator participant leads');

  const intervals: Interval[] = [];
  const curatorInterval = (p: CuratorPeer, endNs?: bigint) => {
    const from = p.events.find((e) => e.event === 'leader');
    assert.ok(from, `${p.id} led`);
    const to = p.events.find((e) => e.event === 'follower' || e.event === 'closed');
    const end = to ? BigInt(to.ms + 1) * 1_000_000n : endNs;
    assert.ok(end !== undefined, `${p.id}'s leadership has an end`);
    intervals.push({ who: p.id, from: BigInt(from.ms) * 1_000_000n, to: end });
  };
  const batonInterval = (id: string, goneNs?: bigint) => {
    const s = starts().find((l) => l.identity === id);
    assert.ok(s, `${id} ran its child`);
    const stop = readChildLog(log).find((l) => l.kind === 'stop' && l.pid === s.pid);
    const end = stop?.monoNs ?? goneNs;
    assert.ok(end !== undefined, `${id}'s child has an end`);
    intervals.push({ who: id, from: s.monoNs, to: end });
    return s.pid;
  };

  // 2. SIGTERM the Curator leader: it closes its latch; baton b1 leads (Curator → baton).
  c1.signal('SIGTERM');
  await c1.exited;
  curatorInterval(c1);
  await waitFor('b1 to run its child', () => starts().find((l) => l.identity === 'b1'), 15_000);
  assert.equal((await line())?.holder, 'b1');
  // What Curator's getParticipants reads: every child is `_c_<uuid>-latch-<seq>` with the bare id as data.
  const names = await new Promise<string[]>((res, rej) => raw.getChildren(latchPath, (e: unknown, ch: string[]) => (e ? rej(e) : res(ch))));
  assert.ok(names.every((n) => /^_c_[0-9a-f-]{36}-latch-\d{10}$/.test(n)), names.join(' '));
  const ids = await Promise.all(names.map((n) => new Promise<string>((res, rej) => raw.getData(`${latchPath}/${n}`, (e: unknown, d: Buffer) => (e ? rej(e) : res(d.toString()))))));
  assert.deepEqual(ids.sort(), ['b1', 'b2', 'c2', 'c3']);

  // 3. kill -9 baton b1: its node goes with its session; Curator c2 leads (baton → Curator).
  const b1pid = starts().find((l) => l.identity === 'b1')!.pid;
  b1.signal('SIGKILL');
  await b1.waitForExit(5000);
  await waitFor('b1 child to die with it', () => !pidAlive(b1pid), 5000, 5);
  batonInterval('b1', monoNs());
  await waitFor('c2 to lead', () => c2.has('leader'), 15_000);

  // 4. kill -9 Curator c2: baton b2 leads after c2's session expires (Curator → baton).
  c2.signal('SIGKILL');
  await c2.exited;
  curatorInterval(c2, monoNs());
  await waitFor('b2 to run its child', () => starts().find((l) => l.identity === 'b2'), 15_000);

  // 5. SIGTERM baton b2: it stops its child and releases; Curator c3 leads (baton → Curator).
  b2.signal('SIGTERM');
  await b2.waitForExit(10_000);
  batonInterval('b2');
  await waitFor('c3 to lead', () => c3.has('leader'), 15_000);
  c3.signal('SIGTERM');
  await c3.exited;
  curatorInterval(c3);

  // 6. No two leaderships overlap, and the order is the line's.
  intervals.sort((a, b) => (a.from < b.from ? -1 : 1));
  assert.deepEqual(intervals.map((i) => i.who), ['c1', 'b1', 'c2', 'b2', 'c3']);
  for (let i = 1; i < intervals.length; i++) {
    const [p, q] = [intervals[i - 1]!, intervals[i]!];
    assert.ok(q.from > p.to, `${q.who} led at ${q.from} before ${p.who}'s leadership ended at ${p.to}`);
  }
  const terms = starts().map((s) => s.term);
  assert.ok(terms[1]! > terms[0]!, `baton terms grow across Curator leaders: ${terms.join(', ')}`);
  const gaps = intervals.slice(1).map((q, i) => `${intervals[i]!.who}→${q.who} ${(Number(q.from - intervals[i]!.to) / 1e6).toFixed(0)}ms`);
  process.stdout.write(`# zookeeper+Curator handovers: ${gaps.join(', ')}\n`);
});
