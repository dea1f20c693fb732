import { after } from 'node:test';
import { storeConformanceSuite, type ConformanceOptions } from '../../../src/testing/index.js';
import { ZooKeeperStore } from '../../../src/stores/zookeeper/index.js';
import { ZooKeeperServer, freePort } from '../../../infra/servers/index.js';

// A real standalone ZooKeeper 3.8 on a free loopback port, tick 200 ms (sessions from 400 ms).
const server = await new ZooKeeperServer().start();
after(() => server.stop());

// The suite's fault hooks (being added to the public suite): passed as a variable so this file
// compiles before and after they land. Until then test/stores/zookeeper/faults.test.ts runs
// the same faults by hand.
const options: ConformanceOptions & { faults: Record<string, unknown> } = {
  name: 'zookeeper',
  makeStore: async () => ZooKeeperStore.fromUrl(server.url('/conformance')),
  restart: () => server.restart(),
  faults: {
    restart: () => server.restart(),
    kill: () => server.kill(),
    start: async () => void (await server.start()),
    freeze: async () => server.pause(),
    thaw: async () => server.resume(),
    makeUnreachableStore: async () => ZooKeeperStore.fromUrl(`zk://127.0.0.1:${await freePort()}/conformance?timeout=300ms`),
  },
};
await storeConformanceSuite(options);
