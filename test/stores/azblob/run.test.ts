import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { runThreeCandidateScenario } from '../../harness/run-scenario.js';
import { AzuriteServer } from '../../../infra/servers/index.js';

// Three real `baton run` processes against a real azurite (needs the build: bin/baton.js). The
// candidates inherit AZURE_STORAGE_CONNECTION_STRING. Leases are 15 s, Azure's shortest blob
// lease: a kill -9 fails over after it; a SIGTERM releases the blob lease and hands over at once.
const server = await new AzuriteServer().start();
process.env.AZURE_STORAGE_CONNECTION_STRING = server.connectionString;
after(() => server.stop());

test('azblob: three candidates under baton run: SIGKILL fails over after the lease, SIGTERM hands over at once', async () => {
  const r = await runThreeCandidateScenario({
    storeUrl: 'azblob://scenario',
    name: 'azblob',
    timing: { leaseMs: 15_000, renewDeadlineMs: 10_000, retryMs: 500 },
  });
  assert.deepEqual([...r.terms].sort((a, b) => a - b), r.terms);
  assert.equal(new Set(r.terms).size, r.terms.length, 'every leadership has its own term');
  assert.ok(r.crashFailoverMs >= 10_000, `a crashed leader's blob lease held for ${r.crashFailoverMs.toFixed(0)} ms`);
  process.stdout.write(`# azblob scenario: crash failover ${r.crashFailoverMs.toFixed(0)} ms, graceful handover ${r.gracefulHandoverMs.toFixed(0)} ms\n`);
});
