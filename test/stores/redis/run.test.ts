import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { runThreeCandidateScenario } from '../../harness/run-scenario.js';
import { RedisServer } from '../../../infra/servers/index.js';

// Three real `baton run` processes against a real redis-server (needs the build: bin/baton.js).
const server = await new RedisServer().start();
after(() => server.stop());

test('redis: three candidates under baton run: SIGKILL fails over after the lease, SIGTERM hands over at once', async () => {
  const r = await runThreeCandidateScenario({ storeUrl: server.url, name: 'redis' });
  assert.deepEqual([...r.terms].sort((a, b) => a - b), r.terms);
  process.stdout.write(`# redis scenario: crash failover ${r.crashFailoverMs.toFixed(0)} ms, graceful handover ${r.gracefulHandoverMs.toFixed(0)} ms\n`);
});
