import { after } from 'node:test';
import { storeConformanceSuite } from '../../../src/testing/index.js';
import { ZooKeeperStore } from '../../../src/stores/zookeeper/index.js';
import { ZooKeeperServer } from '../../../infra/servers/index.js';

// A real standalone ZooKeeper 3.8 on a free loopback port, tick 200 ms (sessions from 400 ms).
const server = await new ZooKeeperServer().start();
after(() => server.stop());

await storeConformanceSuite({
  name: 'zookeeper',
  makeStore: async () => ZooKeeperStore.fromUrl(server.url('/conformance')),
  restart: () => server.restart(),
});
