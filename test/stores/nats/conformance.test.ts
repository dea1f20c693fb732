// The public conformance suite against a real nats-server 2.9 (JetStream, file storage) on a
// free loopback port. Every handle has its own connection, as separate processes would.
import { after } from 'node:test';
import { storeConformanceSuite } from '../../../src/testing/index.js';
import { PartitionProxy } from '../../../infra/proxy.js';
import { NatsStore } from '../../../src/stores/nats/index.js';
import { NatsServer, freePort } from '../../../infra/servers/index.js';

const server = await new NatsServer().start();
// Handles reach the server through a TCP proxy, so the suite can cut their connections.
const proxy = new PartitionProxy(server.port);
await proxy.listen();
after(async () => {
  await proxy.close();
  await server.stop();
});

const open = () => NatsStore.open({ url: `nats://127.0.0.1:${proxy.port}` });

/** The fault hooks of the suite. */
const faults = {
  kill: () => server.kill(),
  start: async () => void (await server.start()),
  freeze: async () => server.pause(),
  thaw: async () => server.resume(),
  cutConnections: async () => proxy.cutAll(),
  // Operators delete with `nats kv del`; a delete marker is what the store then reads.
  deleteRecord: async (lock: string) => {
    const store = await open();
    try {
      await store.deleteRecord(lock);
    } finally {
      await store.close();
    }
  },
  makeUnreachableStore: async () => NatsStore.open({ url: `nats://127.0.0.1:${await freePort()}?timeout=500ms` }),
};

await storeConformanceSuite({
  name: 'nats',
  makeStore: open,
  faults,
});

