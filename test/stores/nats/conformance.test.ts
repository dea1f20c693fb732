// The public conformance suite against a real nats-server 2.9 (JetStream, file storage) on a
// free loopback port. Every handle has its own connection, as separate processes would.
import { after } from 'node:test';
import { storeConformanceSuite } from '../../../src/testing/index.js';
import { NatsStore } from '../../../src/stores/nats/index.js';
import { NatsServer, freePort } from '../../../infra/servers/index.js';

const server = await new NatsServer().start();
after(() => server.stop());

const open = () => NatsStore.open({ url: server.url });

/** The fault hooks of the suite (see common notes); `faults:` is passed once the suite takes it. */
const faults = {
  restart: () => server.restart(),
  kill: () => server.kill(),
  start: async () => void (await server.start()),
  freeze: async () => server.pause(),
  thaw: async () => server.resume(),
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
  restart: faults.restart,
});

void faults;
