import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { runThreeCandidateScenario } from '../../harness/run-scenario.js';
import { ZooKeeperServer } from '../../../infra/servers/index.js';

// Three real `baton run` processes on one LeaderLatch path of a real ZooKeeper 3.8 (needs the
// build: bin/baton.js).
const server = await new ZooKeeperServer().start();
after(() => server.stop());

test('zookeeper: three candidates under baton run: SIGKILL fails over after the lease, SIGTERM hands over at once', async () => {
  const r = await runThreeCandidateScenario({ storeUrl: server.url('/run'), name: 'zookeeper' });
  assert.deepEqual([...r.terms].sort((a, b) => a - b), r.terms, 'terms only grow');
  assert.equal(new Set(r.terms).size, r.terms.length, 'no term is reused');
  process.stdout.write(`# zookeeper scenario: crash failover ${r.crashFailoverMs.toFixed(0)} ms, graceful handover ${r.gracefulHandoverMs.toFixed(0)} ms\n`);
});
