import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { runThreeCandidateScenario } from '../../harness/run-scenario.js';
import { KubeApiServer } from '../../../infra/servers/index.js';

// Three real `baton run` processes against a real kube-apiserver (infra/servers/kube-apiserver.ts),
// found the standard way: KUBECONFIG names its kubeconfig (needs the build: bin/baton.js).
const server = await new KubeApiServer().start();
after(() => server.stop());
process.env.KUBECONFIG = server.kubeconfig;

test('k8s: three candidates under baton run: SIGKILL fails over after the lease, SIGTERM hands over at once', async () => {
  const r = await runThreeCandidateScenario({ storeUrl: 'k8s://default', name: 'k8s' });
  assert.deepEqual([...r.terms].sort((a, b) => a - b), r.terms);
  assert.equal(new Set(r.terms).size, r.terms.length, 'every leadership has its own term');
  process.stdout.write(`# k8s scenario: crash failover ${r.crashFailoverMs.toFixed(0)} ms, graceful handover ${r.gracefulHandoverMs.toFixed(0)} ms\n`);
});
