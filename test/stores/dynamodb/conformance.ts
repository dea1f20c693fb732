/**
 * The public conformance suite with its fault hooks on one DynamoDB implementation (each
 * conformance*.test.ts file runs it on one: dynalite, moto). Connection cuts are tested in
 * faults.test.ts (through a resetting proxy).
 */
import { storeConformanceSuite, type ConformanceOptions, type StoreFaults } from '../../../src/testing/index.js';
import { freePort } from '../../../infra/servers/index.js';
import { openDynamoStore } from '../../../src/stores/dynamodb/index.js';
import { openOn, startDynamoServer, type DynamoImplementation } from './servers.js';

/** dynamoConformance runs the suite against a fresh server of `kind`. */
export async function dynamoConformance(kind: DynamoImplementation): Promise<void> {
  const server = await startDynamoServer(kind);
  const faults: StoreFaults = {
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
  };
  // A killed or restarted DynamoDB keeps its tables; moto forgets everything, which no DynamoDB
  // does, so the kill/restart scenarios (terms across a restart) run only where data is kept.
  if (server.keepsData) {
    Object.assign(faults, {
      restart: () => server.restart(),
      kill: () => server.kill(),
      start: async () => void (await server.start()),
    });
  }
  const options: ConformanceOptions = { name: `dynamodb (${kind})`, makeStore: () => openOn(server), faults };
  await storeConformanceSuite(options);
}
