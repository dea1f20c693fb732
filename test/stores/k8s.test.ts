// The conformance suite against the fake API server (test/harness/k8s-fake.ts: a fake, as no
// kube-apiserver can run here), reached over HTTPS through a kubeconfig like a real cluster.
import { after } from 'node:test';
import { storeConformanceSuite } from '../../src/testing/index.js';
import { K8sStore } from '../../src/stores/k8s/index.js';
import { K8sFakeServer } from '../../infra/servers/index.js';

const server = await new K8sFakeServer().start();
after(() => server.stop());

// Every handle has its own connections and watches, as separate processes would.
await storeConformanceSuite({
  name: 'k8s',
  makeStore: async () => new K8sStore({ url: server.url('default') }),
  restart: () => server.restart(),
});
