import { after } from 'node:test';
import { storeConformanceSuite } from '../../src/testing/index.js';
import { EtcdStore } from '../../src/stores/etcd/index.js';
const open = async (url: string) => EtcdStore.fromUrl(url);
import { EtcdServer } from '../../infra/servers/index.js';

// A real single-member etcd 3.4 on free loopback ports. etcd's smallest lease is 2 s with its
// default timing (lease TTLs are whole seconds and at least 1.5 × the election timeout).
const server = await new EtcdServer().start();
after(() => server.stop());

await storeConformanceSuite({
  name: 'etcd',
  makeStore: () => open(server.url),
  minLeaseMs: 2000,
  restart: () => server.restart(),
});
