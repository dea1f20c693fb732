/**
 * Participants for the two Redis lock libraries people reach for, each on its own ioredis
 * connection to the bench's Redis server.
 *
 * - redlock v5 (beta): `acquire` retries `retryCount` times (default 10), every `retryDelay`
 *   (default 200 ms) ± `retryJitter` (default 100 ms). With one server it is SET NX PX by script.
 * - redis-semaphore `Mutex`: SET NX PX every `retryInterval` (default 10 ms) until
 *   `acquireTimeout` (default 10 s); a held lock is refreshed every 0.8 × lockTimeout unless
 *   `refreshInterval` is 0.
 */
import { createRequire } from 'node:module';
import type { Redis as IORedis } from 'ioredis';
import type { Participant } from './mutex.js';

const require = createRequire(import.meta.url);

/** RedlockSettings are the retry settings under test. */
export interface RedlockSettings {
  retryCount?: number;
  retryDelay?: number;
  retryJitter?: number;
}

function connect(url: string): IORedis {
  const { Redis } = require('ioredis') as typeof import('ioredis');
  return new Redis(url, { connectionName: 'bench-peer' });
}

/** The part of redlock's API the bench uses (its typings do not resolve under its package exports). */
interface RedlockClass {
  new (clients: IORedis[], settings: RedlockSettings): {
    on(event: 'error', listener: (err: Error) => void): unknown;
    acquire(resources: string[], durationMs: number): Promise<{ release(): Promise<unknown> }>;
  };
}

/** redlockParticipant acquires `key` for `durationMs` with redlock's `settings`. */
export function redlockParticipant(url: string, key: string, settings: RedlockSettings, durationMs = 30_000): Participant {
  const mod = require('redlock') as { default: RedlockClass };
  const client = connect(url);
  const redlock = new mod.default([client], settings);
  redlock.on('error', () => {}); // failed attempts while waiting are expected
  return {
    async acquire() {
      const lock = await redlock.acquire([key], durationMs);
      return { release: async () => void (await lock.release()) };
    },
    async close() {
      client.disconnect();
    },
  };
}

/** SemaphoreSettings are the redis-semaphore Mutex options under test. */
export interface SemaphoreSettings {
  retryInterval?: number;
  acquireTimeout?: number;
  lockTimeout?: number;
  refreshInterval?: number;
}

/** semaphoreParticipant acquires `key` with a redis-semaphore Mutex and `settings`. */
export function semaphoreParticipant(url: string, key: string, settings: SemaphoreSettings): Participant {
  const { Mutex } = require('redis-semaphore') as typeof import('redis-semaphore');
  const client = connect(url);
  return {
    async acquire() {
      const mutex = new Mutex(client, key, settings);
      await mutex.acquire();
      return { release: () => mutex.release() };
    },
    async close() {
      client.disconnect();
    },
  };
}
