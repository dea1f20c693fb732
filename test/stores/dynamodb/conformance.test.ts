import { storeConformanceSuite, type ConformanceOptions } from '../../../src/testing/index.js';
import { freePort } from '../../../infra/servers/index.js';
import { openDynamoStore } from '../../../src/stores/dynamodb/index.js';
import { openOn, startDynalite } from './dynalite.js';

// A real dynalite (DynamoDB API on LevelDB) in its own process, data on disk. Connection cuts
// are tested in faults.test.ts (through a resetting proxy).
const server = await startDynalite();

const options = {
  name: 'dynamodb',
  makeStore: () => openOn(server),
  restart: () => server.restart(),
  // The fault hooks of the extended suite; a suite without them ignores the field.
  faults: {
    restart: () => server.restart(),
    kill: () => server.kill(),
    start: async () => void (await server.start()),
    freeze: async () => server.pause(),
    thaw: async () => server.resume(),
    deleteRecord: async (lock: string) => {
      const store = await openOn(server);
      try {
        await store.deleteRecord(lock);
      } finally {
        await store.close();
      }
    },
    makeUnreachableStore: async () =>
      openDynamoStore({ table: 'baton', endpoint: `http://127.0.0.1:${await freePort()}`, region: 'us-east-1', timeoutMs: 500, createTable: false }),
  },
};
await storeConformanceSuite(options as ConformanceOptions);
