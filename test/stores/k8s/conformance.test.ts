// The public conformance suite against a real kube-apiserver over a real etcd 3.6
// (infra/servers/kube-apiserver.ts), reached over HTTPS through a kubeconfig, with its fault hooks:
// the API server killed and restarted, frozen and thawed, every connection cut (through the
// harness's proxy), a Lease deleted through the API. Requests time out well inside the renew deadline; watches
// are re-opened every 2 s. `deleteRecord` deletes the lock's Lease as `kubectl delete lease` does:
// the term must survive it (the floor Lease keeps it, src/stores/k8s/index.ts).
import { after } from 'node:test';
import { storeConformanceSuite } from '../../../src/testing/index.js';
import { K8sStore } from '../../../src/stores/k8s/index.js';
import { leaseNameOf } from '../../../src/stores/k8s/names.js';
import { KubeApiServer } from '../../../infra/servers/index.js';

const server = await new KubeApiServer().start();
after(() => server.stop());

// Every handle has its own connections and watches, as separate processes would.
await storeConformanceSuite({
  name: 'k8s',
  makeStore: async () => new K8sStore({ url: `${server.url('default')}&request_timeout=1s&watch_timeout=2s` }),
  faults: {
    kill: () => server.kill(),
    start: async () => void (await server.start()),
    freeze: async () => server.pause(),
    thaw: async () => server.resume(),
    // The proxy drops every open connection, watches included: both a cut network and a cut feed.
    cutConnections: () => server.cut(),
    cutFeed: () => server.cut(),
    deleteRecord: async (lock) => {
      const res = await server.deleteLease('default', leaseNameOf(lock));
      if (res.status !== 200 && res.status !== 404) throw new Error(`deleting the Lease of ${lock}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
    },
  },
});
