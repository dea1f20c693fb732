/**
 * A Redis-only fault, beyond the public suite's (kill, restart, freeze, cut connections, cut
 * feed — test/stores/redis/conformance.test.ts): a leader's connection killed by `CLIENT KILL`
 * while its renewal is held up in flight by `CLIENT PAUSE`. Real electors on short leases
 * against a real redis-server; leaderships never overlap, nothing escapes.
 */
import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { RedisStore } from '../../../src/stores/redis/index.js';
import { Candidates, faultTiming, recordEscapes, uniqueLock } from '../../../src/testing/index.js';
import { RedisServer } from '../../../infra/servers/index.js';

const server = await new RedisServer().start();
const escapes = recordEscapes();
const groups: Candidates[] = [];
after(async () => {
  escapes.stop();
  await server.stop();
});
afterEach(async () => {
  await Promise.all(groups.splice(0).map((g) => g.stop()));
  assert.deepEqual(escapes.take(), [], 'nothing escaped as an uncaught exception or unhandled rejection');
});

describe('redis faults', () => {
  it('connections killed (CLIENT KILL) while renewals are held up: nothing escapes, the elector recovers or steps down', async () => {
    const timing = faultTiming(2_000);
    const group = await new Candidates(uniqueLock('redis-clientkill'), timing).start(2, () => new RedisStore({ url: server.url }));
    groups.push(group);
    const admin = new Redis({ host: '127.0.0.1', port: server.port });
    admin.on('error', () => {});
    try {
      await group.leader();
      await sleep(500);
      const errorsBefore = group.storeErrors;
      for (let round = 0; round < 4; round++) {
        // Hold every write (scripts included) so a renewal is in flight, then kill it mid-way.
        await admin.call('CLIENT', 'PAUSE', '1000', 'WRITE');
        await sleep(timing.retryPeriodMs + 150);
        const killed = Number(await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes'));
        assert.ok(killed >= 2, `killed ${killed} connections`);
        await admin.call('CLIENT', 'UNPAUSE');
        await sleep(400);
      }
      await group.assertRecoversFromCuts(errorsBefore);
      assert.deepEqual(escapes.take(), []);
    } finally {
      admin.disconnect();
    }
  });
});
