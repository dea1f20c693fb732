/**
 * The shared shape of the Redis lock libraries (redlock, redis-semaphore) for the bench: a
 * participant can block in `acquire` until it holds the lock, and release it. Each
 * participant has its own connection, as separate processes would.
 */
import { randomBetween, sleep } from '../clock.js';
import { diffCounts, withSession, type ServerCounter } from '../counters.js';
import { round } from '../stats.js';

/** Held is an acquired lock. */
export interface Held {
  release(): Promise<void>;
}

/** Participant is one contender for the lock. */
export interface Participant {
  /** acquire blocks (retrying on the library's schedule) until the lock is held. */
  acquire(): Promise<Held>;
  close(): Promise<void>;
}

/**
 * handoverSamples: `a` holds; `b` starts waiting; a random 0–cycleMs later `a` releases and
 * the time until `b` holds is one sample; then the roles swap. `cycleMs` is the waiter's retry
 * period (delay + jitter), so releases land at a random phase of it.
 */
export async function handoverSamples(a: Participant, b: Participant, n: number, cycleMs: number): Promise<number[]> {
  const samples: number[] = [];
  let held = await a.acquire();
  let waiter = b;
  let other = a;
  for (let i = 0; i < n; i++) {
    const waiting = waiter.acquire();
    await sleep(randomBetween(0, cycleMs));
    const t0 = performance.now();
    await held.release();
    held = await waiting;
    samples.push(performance.now() - t0);
    [waiter, other] = [other, waiter];
  }
  await held.release();
  return samples;
}

/**
 * waiterLoad: `holder` holds the lock silently (no extension or refresh), `waiter` blocks in
 * acquire; everything the server counts over `windowS` is the waiter's. Returns requests/s and
 * the per-kind rates.
 */
export async function waiterLoad(holder: Participant, waiter: Participant, counter: ServerCounter, windowS: number): Promise<{ rps: number; byKind: Record<string, number> }> {
  const held = await holder.acquire();
  const waiting = waiter.acquire();
  await sleep(500);
  const { a, b, seconds } = await withSession(counter, async (session) => {
    const a = await session.snapshot();
    const t0 = performance.now();
    await sleep(windowS * 1000);
    const b = await session.snapshot();
    return { a, b, seconds: (performance.now() - t0) / 1000 };
  });
  await held.release();
  await (await waiting).release();
  const d = diffCounts(a, b);
  return { rps: round(d.total / seconds, 2), byKind: Object.fromEntries(Object.entries(d.byKind).map(([k, v]) => [k, round(v / seconds, 2)])) };
}

