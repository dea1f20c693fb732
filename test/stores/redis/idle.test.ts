/**
 * Zero idle load on Redis: while a leader holds the lock and renews, a standby whose change feed
 * is live sends the server nothing at all — no read, no script, no PING — over several lease
 * durations. Counted by the server itself: its MONITOR feed shows every command a client sends,
 * with the client's address, so the standby's connections are told apart from the leader's.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { LeaderElector } from '../../../src/core/elector.js';
import { RedisStore } from '../../../src/stores/redis/index.js';
import { RedisServer } from '../../../infra/servers/index.js';
import { sleep, waitFor, within } from '../../harness/wait.js';

const server = await new RedisServer().start();
const admin = new Redis({ port: server.port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
admin.on('error', () => {});
after(async () => {
  admin.disconnect();
  await server.stop();
});

const timing = { leaseDurationMs: 1_000, renewDeadlineMs: 600, retryPeriodMs: 250 };

/** clientAddrs lists the addresses (ip:port) of the server's clients. */
async function clientAddrs(): Promise<Set<string>> {
  const list = (await admin.call('CLIENT', 'LIST')) as string;
  return new Set([...list.matchAll(/\baddr=(\S+)/g)].map((m) => m[1]!));
}

/** monitor counts the commands clients send (not those a Lua script runs), by client address. */
async function monitor(): Promise<{ byAddr: Map<string, string[]>; stop(): void }> {
  const m = new Redis({ port: server.port, host: '127.0.0.1', monitor: true });
  m.on('error', () => {});
  await new Promise<void>((resolve) => m.once('monitoring', () => resolve()));
  const byAddr = new Map<string, string[]>();
  m.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua') return;
    const addr = source.replace(/^\d+ /, '');
    byAddr.set(addr, [...(byAddr.get(addr) ?? []), String(args[0]).toLowerCase()]);
  });
  return { byAddr, stop: () => m.disconnect() };
}

describe('redis: idle standby', () => {
  it('a standby whose feed is live sends nothing over four lease durations while a leader renews', async () => {
    const lock = `idle-${process.pid}`;
    const before = await clientAddrs();
    const leaderStore = new RedisStore({ url: server.url });
    const leader = new LeaderElector({ store: leaderStore, lock, identity: 'leader', ...timing });
    let standbyStore: RedisStore | undefined;
    let standby: LeaderElector | undefined;
    try {
      await leaderStore.verify();
      leader.start();
      await within(leader.elected(), 10_000, 'the leader');
      // The standby's connections are the ones that appear after the leader's.
      const leaderAddrs = [...(await clientAddrs())].filter((a) => !before.has(a));
      standbyStore = await new RedisStore({ url: server.url }).verify();
      standby = new LeaderElector({ store: standbyStore, lock, identity: 'standby', ...timing }).start();
      const [st, sb] = [standbyStore, standby];
      await waitFor(() => st.watchLive && sb.leader()?.holder === 'leader', 10_000, 'the standby to see the leader');
      assert.equal(standbyStore.watchSeesExpiry, true, 'the test server publishes expired events');
      // Start-up is not idle: the standby read before its subscription was confirmed, so it looks
      // once more, within one jittered retry period, and then waits on the feed alone.
      await sleep(timing.retryPeriodMs * 2.2 + 200);
      const standbyAddrs = [...(await clientAddrs())].filter((a) => !before.has(a) && !leaderAddrs.includes(a));
      assert.equal(standbyAddrs.length, 2, `the standby's command and subscriber connections: ${standbyAddrs.join(', ')}`);
      const feed = await monitor();
      let renewals = 0;
      const onRenewed = () => renewals++;
      leader.on('renewed', onRenewed);
      await sleep(timing.leaseDurationMs * 4);
      leader.off('renewed', onRenewed);
      const seen = new Map(feed.byAddr);
      feed.stop();
      // The counter works: it saw the leader's renewals (EVALSHA), one command each.
      const fromLeader = leaderAddrs.flatMap((a) => seen.get(a) ?? []);
      assert.ok(renewals >= 10, `the leader renewed (${renewals} times)`);
      assert.ok(fromLeader.filter((c) => c === 'evalsha').length >= renewals - 1, `the leader's renewals were counted: ${fromLeader.join(' ')}`);
      const fromStandby = standbyAddrs.flatMap((a) => seen.get(a) ?? []);
      assert.deepEqual(fromStandby, [], 'the idle standby sent no command');
      // Nor did any other connection: the standby did not reconnect meanwhile.
      const others = [...seen].filter(([a]) => !leaderAddrs.includes(a) && !standbyAddrs.includes(a));
      assert.deepEqual(others, [], 'no other client sent anything');
      assert.equal(standby.isLeader(), false);
      // Still awake: the leader's release reaches the standby through the feed alone.
      await leader.stop();
      await within(standby.elected(), timing.leaseDurationMs * 2, 'the standby after the release');
    } finally {
      await standby?.stop();
      await leader.stop();
      await standbyStore?.close();
      await leaderStore.close();
    }
  });
});
