import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { runThreeCandidateScenario } from '../../harness/run-scenario.js';
import { EtcdServer } from '../../../infra/servers/index.js';

// Three real `baton run` processes campaigning in etcd's election protocol against a real etcd
// 3.4 (needs the build: bin/baton.js).
const server = await new EtcdServer().start();
after(() => server.stop());

test('etcd: three candidates under baton run: SIGKILL fails over after the lease, SIGTERM hands over at once', async () => {
  const r = await runThreeCandidateScenario({ storeUrl: server.url, name: 'etcd' });
  assert.deepEqual([...r.terms].sort((a, b) => a - b), r.terms, 'terms only grow');
  assert.equal(new Set(r.terms).size, r.terms.length, 'no term is reused');
  process.stdout.write(`# etcd scenario: crash failover ${r.crashFailoverMs.toFixed(0)} ms, graceful handover ${r.gracefulHandoverMs.toFixed(0)} ms\n`);
});
