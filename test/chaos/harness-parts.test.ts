/**
 * Parts of the chaos harness on their own: the partition proxy against a real TCP echo server
 * on loopback, the seeded schedule, and the command line's one-line errors and exit codes.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { planFaults } from '../../chaos/faults.js';
import { PartitionProxy } from '../../infra/proxy.js';
import { Random } from '../../chaos/random.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

async function echoServer(): Promise<{ server: Server; port: number }> {
  const server = createServer((s) => s.on('data', (d) => s.write(d)).on('error', () => {}));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as { port: number }).port };
}

function client(port: number): Promise<{ socket: Socket; received: () => string; closed: Promise<string> }> {
  return new Promise((resolve, reject) => {
    let data = '';
    const socket = connect({ host: '127.0.0.1', port }, () => resolve({ socket, received: () => data, closed }));
    socket.on('data', (d) => (data += d.toString()));
    const closed = new Promise<string>((r) => {
      socket.on('error', (e: NodeJS.ErrnoException) => r(e.code ?? 'error'));
      socket.on('close', () => r('close'));
    });
    socket.once('error', reject);
  });
}

const until = async (cond: () => boolean, ms = 2000) => {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  return cond();
};

test('proxy: forwards, holds bytes during a blackhole and delivers them after the heal', async () => {
  const { server, port } = await echoServer();
  const proxy = new PartitionProxy(port);
  try {
    const c = await client(await proxy.listen());
    c.socket.write('a');
    assert.ok(await until(() => c.received() === 'a'));
    proxy.cut('blackhole');
    c.socket.write('b');
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(c.received(), 'a', 'nothing crosses a blackhole');
    assert.equal(c.socket.destroyed, false, 'the connection stays open');
    proxy.heal();
    assert.ok(await until(() => c.received() === 'ab'), `got ${c.received()}`);
    c.socket.destroy();
  } finally {
    await proxy.close();
    server.close();
  }
});

test('proxy: a reset cut resets open connections and new ones until healed', async () => {
  const { server, port } = await echoServer();
  const proxy = new PartitionProxy(port);
  try {
    const proxyPort = await proxy.listen();
    const c = await client(proxyPort);
    proxy.cut('reset');
    assert.equal(await c.closed, 'ECONNRESET');
    // A new connection is reset too, during the handshake or right after it.
    const outcome = await client(proxyPort).then(
      (d) => d.closed,
      (err: NodeJS.ErrnoException) => err.code,
    );
    assert.equal(outcome, 'ECONNRESET');
    proxy.heal();
    const e = await client(proxyPort);
    e.socket.write('x');
    assert.ok(await until(() => e.received() === 'x'));
    e.socket.destroy();
  } finally {
    await proxy.close();
    server.close();
  }
});

test('faults: a seed always gives the same schedule, and every kind comes once per round', () => {
  const timing = { leaseDurationMs: 1000, renewDeadlineMs: 600, retryPeriodMs: 250 };
  const kinds = ['kill', 'pause', 'store', 'clock', 'stall'] as const;
  const take = (seed: number, n: number) => {
    const plans = planFaults(new Random(seed), kinds, timing);
    return Array.from({ length: n }, () => plans.next().value!);
  };
  assert.deepEqual(take(42, 10), take(42, 10));
  assert.notDeepEqual(take(42, 10), take(43, 10));
  const first = take(42, 10);
  assert.deepEqual(new Set(first.slice(0, 5).map((p) => p.kind)), new Set(kinds));
  assert.deepEqual(new Set(first.slice(5, 10).map((p) => p.kind)), new Set(kinds));
  for (const p of first) if (p.kind === 'pause' || p.kind === 'stall' || p.kind === 'store') assert.ok(p.holdMs > timing.leaseDurationMs);
});

test('chaos command line: bad input is one line and a sysexits code', () => {
  const cases: [string[], number, RegExp][] = [
    [['--store', 'nosuch'], 64, /--store "nosuch" is not a chaos store kind/],
    [['--store', 'sqlite', '--faults', 'partition'], 64, /partition does not apply to sqlite: .*filesystem/],
    [['--store', 'sqlite', '--faults', 'meteor'], 64, /"meteor" is not a fault kind/],
    [['--store', 'sqlite', '--candidates', '1'], 64, /--candidates must be a whole number from 2 to 9/],
    [['--store', 'sqlite', '--duration', '5'], 78, /--duration: "5" is not a duration/],
    [['--store', 'sqlite', '--lease', '1s', '--renew-deadline', '2s'], 78, /leaseDurationMs .* must be greater than renewDeadlineMs/],
    [['--store', 'etcd', '--store-faults', 'member-kill'], 64, /--store-faults: "member-kill" is not a way to break etcd \(restart, freeze\)/],
    [['--store', 'etcd-cluster', '--store-faults', ','], 64, /--store-faults is empty \(choose from member-kill, member-freeze, member-freeze-leader\)/],
    [['--store', 'zookeeper-ensemble', '--store-faults', 'member-freeze-leader'], 64, /"member-freeze-leader" is not a way to break zookeeper-ensemble \(member-kill, member-freeze\)/],
    [['--bogus'], 64, /unknown option '--bogus'/],
    [['--store', 'redis', '--faults', 'link'], 64, /link needs --net netns/],
    [['--store', 'dynamodb', '--net', 'netns'], 64, /--net netns runs postgres, redis, nats, mysql, etcd, zookeeper \(not dynamodb\)/],
    [['--store', 'redis', '--net', 'netns', '--partition', 'blackhole'], 64, /--partition: "blackhole" is not one of two-way, leader-to-store, store-to-leader, isolate/],
    [['--store', 'redis', '--trials', '0'], 64, /--trials must be a whole number from 1 to 10000/],
  ];
  for (const [args, code, message] of cases) {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'chaos/run.ts', ...args], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(r.status, code, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.equal(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr}`);
  }
});

test('chaos command line: link and load faults are used only when named, so --faults all keeps every seed', async () => {
  const { parseChaosArgs } = await import('../../chaos/options.js');
  assert.deepEqual(parseChaosArgs(['--store', 'redis']).faults, ['kill', 'pause', 'store', 'partition', 'clock', 'stall', 'handover']);
  assert.deepEqual(parseChaosArgs(['--store', 'redis']).partitionVariants, ['blackhole', 'reset']);
  assert.deepEqual(parseChaosArgs(['--store', 'redis', '--net', 'netns', '--faults', 'partition,link,load', '--link', 'loss-5pct']).linkVariants, ['loss-5pct']);
});

test('chaos command line: --store-faults narrows the ways a store fault breaks the store', async () => {
  const { parseChaosArgs } = await import('../../chaos/options.js');
  assert.deepEqual(parseChaosArgs(['--store', 'etcd-cluster']).storeFaults, ['member-kill', 'member-freeze']);
  assert.deepEqual(parseChaosArgs(['--store', 'etcd-cluster', '--store-faults', 'MEMBER-KILL']).storeFaults, ['member-kill']);
  assert.deepEqual(parseChaosArgs(['--store', 'redis', '--store-faults', 'freeze,restart']).storeFaults, ['restart', 'freeze']);
  // Freezing the raft leader is opt-in: the default (and so every seed drawn from it) is unchanged.
  assert.deepEqual(parseChaosArgs(['--store', 'etcd-cluster-current']).storeFaults, ['member-kill', 'member-freeze']);
  assert.deepEqual(parseChaosArgs(['--store', 'etcd-cluster-current', '--store-faults', 'member-freeze-leader,member-kill']).storeFaults, ['member-kill', 'member-freeze-leader']);
});
