import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { runThreeCandidateScenario } from '../../harness/run-scenario.js';
import { PostgresServer } from '../../../infra/servers/index.js';

// Three real `baton run` processes against a real PostgreSQL 15 (needs the build: bin/baton.js).
const server = await new PostgresServer().start();
after(() => server.stop());

test('postgres: three candidates under baton run: SIGKILL fails over after the lease, SIGTERM hands over at once', async () => {
  const r = await runThreeCandidateScenario({ storeUrl: server.url, name: 'postgres' });
  assert.deepEqual([...r.terms].sort((a, b) => a - b), r.terms);
  assert.equal(new Set(r.terms).size, r.terms.length, 'every leadership has its own term');
  process.stdout.write(`# postgres scenario: crash failover ${r.crashFailoverMs.toFixed(0)} ms, graceful handover ${r.gracefulHandoverMs.toFixed(0)} ms\n`);
});
