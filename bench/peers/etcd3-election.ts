/**
 * The `etcd3` npm package's own Election (campaign / resign) on the bench's etcd — the same
 * protocol baton's etcd store speaks (a key per candidate under its own lease; the lowest create
 * revision leads; each waiter watches the key just before its own). Every participant has its
 * own client. TTL 15 s, to match baton's default lease (etcd3's default is 60 s).
 */
import { createRequire } from 'node:module';
import type { Campaign, Etcd3 } from 'etcd3';
import type { EventEmitter } from 'node:events';
import { monoMs, randomBetween, sleep } from '../clock.js';
import { diffCounts, subtractDeltas, withSession, type CountDelta, type ServerCounter } from '../counters.js';
import { round } from '../stats.js';

const require = createRequire(import.meta.url);

/** ETCD3_TTL_S is the campaign lease TTL the bench uses. */
export const ETCD3_TTL_S = 15;

function client(endpoint: string): Etcd3 {
  const { Etcd3: Client } = require('etcd3') as typeof import('etcd3');
  return new Client({ hosts: endpoint });
}

/** waiting resolves once a campaign is queued and watching its predecessor. */
function waiting(c: Campaign): Promise<void> {
  // '_isWaiting' is etcd3's own (internal) signal that the waiter's predecessor watch begins.
  return new Promise((resolve) => c.once('_isWaiting' as 'elected', () => resolve()));
}

/**
 * etcd3Handover: the leader campaign resigns (revoking its lease, which deletes its key); the
 * time until the waiting campaign's `elected` is one sample. Each round starts a new waiter,
 * on the other client, waits until it watches, then a random 20–60 ms, as baton's run does.
 */
export async function etcd3Handover(endpoint: string, n: number): Promise<number[]> {
  const clients = [client(endpoint), client(endpoint)];
  const name = `bench-e3-${Math.random().toString(36).slice(2, 8)}`;
  const elections = clients.map((c) => c.election(name, ETCD3_TTL_S));
  const samples: number[] = [];
  let leader = elections[0]!.campaign('c0');
  leader.on('error', () => {});
  try {
    await leader.wait();
    for (let i = 1; i <= n; i++) {
      const waiter = elections[i % 2]!.campaign(`c${i}`);
      waiter.on('error', () => {});
      const queued = waiting(waiter);
      const elected = waiter.wait();
      await queued;
      await sleep(randomBetween(20, 60));
      const t0 = performance.now();
      await leader.resign();
      await elected;
      samples.push(performance.now() - t0);
      leader = waiter;
    }
  } finally {
    await leader.resign().catch(() => {});
    for (const c of clients) c.close();
  }
  return samples;
}

/**
 * etcd3IdleLoad: gRPC messages per second caused by one waiting campaign, as the difference
 * between windows of `keepalives` holder lease keepalives with and without the waiter (the
 * holder's keepalives are the windows' edges, so its share is the same in both).
 */
export async function etcd3IdleLoad(endpoint: string, counter: ServerCounter, keepalives: number): Promise<{ rps: number; byKind: Record<string, number>; windowS: number }> {
  const clients = [client(endpoint), client(endpoint)];
  const name = `bench-e3-idle-${Math.random().toString(36).slice(2, 8)}`;
  const holder = clients[0]!.election(name, ETCD3_TTL_S).campaign('holder');
  holder.on('error', () => {});
  let waiter: Campaign | undefined;
  try {
    await holder.wait();
    // The campaign's lease is private in etcd3's types; its keepalive events mark the windows.
    const lease = (holder as unknown as { lease: EventEmitter }).lease;
    const tick = () => new Promise<void>((resolve) => lease.once('keepaliveSucceeded', () => resolve()));
    const window = (): Promise<{ delta: CountDelta; seconds: number }> =>
      withSession(counter, async (session) => {
        await tick();
        await sleep(20);
        const a = await session.snapshot();
        const t0 = monoMs();
        for (let i = 0; i < keepalives; i++) await tick();
        await sleep(20);
        const b = await session.snapshot();
        return { delta: diffCounts(a, b), seconds: (monoMs() - t0) / 1000 };
      });
    const without = await window();
    waiter = clients[1]!.election(name, ETCD3_TTL_S).campaign('waiter');
    waiter.on('error', () => {});
    await waiting(waiter);
    await sleep(1000);
    const withWaiter = await window();
    const d = subtractDeltas(withWaiter.delta, without.delta);
    const perS = (x: number) => round(x / withWaiter.seconds, 4);
    return { rps: perS(d.total), byKind: Object.fromEntries(Object.entries(d.byKind).map(([k, v]) => [k, perS(v)])), windowS: round(withWaiter.seconds, 1) };
  } finally {
    await waiter?.resign().catch(() => {});
    await holder.resign().catch(() => {});
    for (const c of clients) c.close();
  }
}
