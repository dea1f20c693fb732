/**
 * Fault tests for the Redis store with real electors on short leases (lease 2 s, renew deadline
 * 1.4 s, retry 200 ms) against a real redis-server: killed (SIGKILL) and restarted, frozen
 * (SIGSTOP) for longer than the lease, and a leader's connection killed by `CLIENT KILL` while
 * a renewal is held up by `CLIENT PAUSE`. Throughout, leaderships must never overlap, terms
 * must only grow, and no exception may escape (uncaughtException / unhandledRejection).
 * Bounds are generous: these prove behaviour, the benchmarks measure it. The scenarios shared
 * with the other stores are in test/harness/fault-candidates.ts.
 */
import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { RedisStore } from '../../src/stores/redis/index.js';
import { waitFor } from '../../src/testing/conformance/context.js';
import { FaultHarness, TIMING } from '../harness/fault-candidates.js';
import { RedisServer } from '../../infra/servers/index.js';

const server = await new RedisServer().start();
after(() => server.stop());

/** Each candidate has its own store handle (its own connections). */
const h = new FaultHarness('redis', () => new RedisStore({ url: server.url }));
afterEach(() => h.cleanup());

describe('redis faults', () => {
  it('subscriber connection killed: watchers are woken and watchLive is false until it is subscribed again, then they are woken again', async () => {
    const store = new RedisStore({ url: server.url });
    const admin = new Redis({ host: '127.0.0.1', port: server.port });
    admin.on('error', () => {});
    try {
      const heard: { record: unknown; live: boolean }[] = [];
      const stop = store.watch('feedcut', (record) => heard.push({ record, live: store.watchLive }));
      await waitFor(() => store.watchLive, 5_000, 'subscribed');
      const killed = Number(await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub'));
      assert.ok(killed >= 1, 'the subscriber connection was killed');
      await waitFor(() => heard.some((h) => h.record === undefined && !h.live), 5_000, 'a wake-up while the feed is down');
      await waitFor(() => store.watchLive && heard.some((h) => h.record === undefined && h.live), 5_000, 'a wake-up once subscribed again');
      stop();
    } finally {
      admin.disconnect();
      await store.close();
    }
  });

  it('server killed while a leader holds: it steps down by its deadline; after a restart a leader is elected again', async () => {
    await h.killAndRestart(await h.candidates('kill'), server, 15_000);
  });

  it('server frozen (SIGSTOP) longer than the lease: the leader steps down by its deadline; after SIGCONT a leader is elected again', async () => {
    await h.freezeAndThaw(await h.candidates('stop'), server, 15_000);
  });

  it('connections killed (CLIENT KILL) while renewals are held up: nothing escapes, the elector recovers or steps down', async () => {
    const group = await h.candidates('clientkill');
    const admin = new Redis({ host: '127.0.0.1', port: server.port });
    admin.on('error', () => {});
    try {
      await group.leader();
      await sleep(500);
      const errorsBefore = group.storeErrors;
      for (let round = 0; round < 4; round++) {
        // Hold every write (scripts included) so a renewal is in flight, then kill it mid-way.
        await admin.call('CLIENT', 'PAUSE', '1000', 'WRITE');
        await sleep(TIMING.retryPeriodMs + 150);
        const killed = Number(await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes'));
        assert.ok(killed >= 2, `killed ${killed} connections`);
        await admin.call('CLIENT', 'UNPAUSE');
        await sleep(400);
      }
      await h.assertRecoversFromCuts(group, errorsBefore, 'CLIENT KILL', 4);
    } finally {
      admin.disconnect();
    }
  });
});
