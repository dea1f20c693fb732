/**
 * The peers, on the same servers in the same run: redlock and redis-semaphore on the bench's
 * Redis (defaults, and a tuned retry delay), the etcd3 package's Election on the bench's etcd,
 * and computed figures for a Kubernetes-style polling elector.
 *
 * Acquire-after-release latency is the graceful-handover equivalent: a waiter blocked in
 * acquire gets the lock after the holder releases. Idle load is what one waiting acquirer costs
 * the server, from the server's own counters.
 */
import { randomBytes } from 'node:crypto';
import { summaryFields, type ResultRow } from '../results.js';
import { round, summarize } from '../stats.js';
import type { BenchContext, StoreUnderTest } from '../plan.js';
import { handoverSamples, waiterLoad, type Participant } from './mutex.js';
import { redlockParticipant, semaphoreParticipant } from './redis-libs.js';
import { ETCD3_TTL_S, etcd3Handover, etcd3IdleLoad } from './etcd3-election.js';
import { kubernetesRows } from './kubernetes.js';

/** A Redis lock library under one group of settings. */
interface RedisPeer {
  system: string;
  settings: string;
  /** The waiter's retry period, delay + jitter (releases land at a random phase of it). */
  cycleMs: number;
  participant(url: string, key: string, role: 'holder' | 'waiter' | 'contender'): Participant;
}

const LONG_MS = 600_000;

/** REDIS_PEERS: each library with its defaults and with a tuned (shorter) retry delay. */
const REDIS_PEERS: readonly RedisPeer[] = [
  {
    system: 'redlock',
    settings: 'defaults: retryDelay 200 ms, retryJitter 100 ms, retryCount 10 (idle waiter: retryCount -1, i.e. forever)',
    cycleMs: 300,
    participant: (url, key, role) => redlockParticipant(url, key, role === 'waiter' ? { retryCount: -1 } : {}, role === 'holder' ? LONG_MS : 30_000),
  },
  {
    system: 'redlock-tuned',
    settings: 'retryDelay 10 ms, retryJitter 5 ms, retryCount -1',
    cycleMs: 15,
    participant: (url, key, role) => redlockParticipant(url, key, { retryDelay: 10, retryJitter: 5, retryCount: -1 }, role === 'holder' ? LONG_MS : 30_000),
  },
  {
    system: 'redis-semaphore',
    settings: 'Mutex defaults: retryInterval 10 ms, lockTimeout 10 s, acquireTimeout 10 s (idle waiter: acquireTimeout 10 min; holder: no refresh)',
    cycleMs: 10,
    participant: (url, key, role) =>
      semaphoreParticipant(url, key, role === 'waiter' ? { acquireTimeout: LONG_MS } : role === 'holder' ? { lockTimeout: LONG_MS, refreshInterval: 0 } : {}),
  },
  {
    system: 'redis-semaphore-tuned',
    settings: 'Mutex retryInterval 1 ms',
    cycleMs: 1,
    participant: (url, key, role) =>
      semaphoreParticipant(url, key, role === 'holder' ? { retryInterval: 1, lockTimeout: LONG_MS, refreshInterval: 0 } : { retryInterval: 1, acquireTimeout: LONG_MS }),
  },
];

/** measurePeers adds the peers' rows (skipping those whose server is not part of this run). */
export async function measurePeers(ctx: BenchContext, stores: readonly StoreUnderTest[]): Promise<void> {
  const redis = stores.find((s) => s.kind.name === 'redis')?.store;
  const etcd = stores.find((s) => s.kind.name === 'etcd')?.store;
  if (redis?.endpoint && redis.counter) {
    for (const peer of REDIS_PEERS) await redisPeer(ctx, peer, redis.endpoint, redis.counter);
  } else {
    ctx.notes.push('peers: Redis is not part of this run; redlock and redis-semaphore skipped');
  }
  if (etcd?.endpoint && etcd.counter) {
    const samples = await etcd3Handover(etcd.endpoint, ctx.plan.peerHandovers);
    const settings = `Election TTL ${ETCD3_TTL_S} s (etcd3's default is 60 s); one client per participant`;
    add(ctx, {
      system: 'etcd3-election',
      store: 'etcd',
      metric: 'graceful_handover_ms',
      unit: 'ms',
      ...summaryFields(summarize(samples)),
      samples: samples.map((x) => round(x)),
      settings,
      method: "Campaign.resign() → the waiting campaign's 'elected', in-process; released 20–60 ms after the waiter watches",
    });
    const idle = await etcd3IdleLoad(etcd.endpoint, etcd.counter, ctx.plan.etcd3IdleKeepalives);
    add(ctx, {
      system: 'etcd3-election',
      store: 'etcd',
      metric: 'idle_standby_rps',
      unit: 'requests/s',
      value: idle.rps,
      n: Math.round(idle.windowS),
      settings,
      method: `server counter over holder keepalive windows with the waiting campaign, minus without — ${etcd.counter.source}`,
      detail: { perSecondByKind: idle.byKind, windowS: idle.windowS },
    });
  } else {
    ctx.notes.push('peers: etcd is not part of this run; etcd3 Election skipped');
  }
  for (const row of kubernetesRows()) add(ctx, row);
}

async function redisPeer(ctx: BenchContext, peer: RedisPeer, url: string, counter: NonNullable<StoreUnderTest['store']['counter']>): Promise<void> {
  const key = `bench:${peer.system}:${randomBytes(4).toString('hex')}`;
  const a = peer.participant(url, key, 'contender');
  const b = peer.participant(url, key, 'contender');
  let samples: number[];
  try {
    samples = await handoverSamples(a, b, ctx.plan.peerHandovers, peer.cycleMs);
  } finally {
    await a.close();
    await b.close();
  }
  add(ctx, {
    system: peer.system,
    store: 'redis',
    metric: 'graceful_handover_ms',
    unit: 'ms',
    ...summaryFields(summarize(samples)),
    samples: samples.map((x) => round(x)),
    settings: peer.settings,
    method: 'release() → the blocked acquire() resolves, in-process, one connection per participant; released 0–(delay + jitter) after the waiter began',
  });
  const idleKey = `${key}:idle`;
  const holder = peer.participant(url, idleKey, 'holder');
  const waiter = peer.participant(url, idleKey, 'waiter');
  try {
    const idle = await waiterLoad(holder, waiter, counter, ctx.plan.peerIdleWindowS);
    add(ctx, {
      system: peer.system,
      store: 'redis',
      metric: 'idle_standby_rps',
      unit: 'requests/s',
      value: idle.rps,
      n: ctx.plan.peerIdleWindowS,
      settings: peer.settings,
      method: `server counter while one acquirer waits on a silently held lock — ${counter.source}`,
      detail: { perSecondByKind: idle.byKind },
    });
  } finally {
    await holder.close();
    await waiter.close();
  }
}

function add(ctx: BenchContext, row: ResultRow): void {
  ctx.results.add(row);
}
