/**
 * Directed handover through the command line on a server store: the scenario of
 * test/harness/handover-scenario.ts (three `baton run` candidates, `baton handover --to` each
 * other one in turn, `--to nobody` refused) against a real redis-server.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { RedisServer } from '../../infra/servers/index.js';
import { runHandoverScenario } from '../harness/handover-scenario.js';

const server = await new RedisServer().start();
after(() => server.stop());

test('redis: baton handover --to each other candidate in turn: it leads next, after the old command stopped; --to nobody exits 1 and changes nothing', async () => {
  const r = await runHandoverScenario({ storeUrl: server.url, name: 'redis' });
  assert.equal(new Set(r.holders).size, 3);
});
