/**
 * The public conformance suite on the Azure Blob store, against a real azurite blob service
 * (npm azurite 3.35.0) on a free loopback port. Leases are 15 s: Azure's shortest blob lease.
 * Each handle reaches azurite through a TCP proxy, so `cutConnections` can reset them all.
 */
import { after } from 'node:test';
import { BlobServiceClient } from '@azure/storage-blob';
import { storeConformanceSuite } from '../../../src/testing/index.js';
import { AzblobStore } from '../../../src/stores/azblob/index.js';
import { AZURITE_ACCOUNT, AZURITE_KEY, AzuriteServer, freePort } from '../../../infra/servers/index.js';
import { PartitionProxy } from '../../../infra/proxy.js';

const server = await new AzuriteServer().start();
const proxy = new PartitionProxy(server.port);
await proxy.listen();
after(async () => {
  await proxy.close();
  await server.stop();
});

function containerVia(port: number) {
  const cs = `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${AZURITE_KEY};BlobEndpoint=http://127.0.0.1:${port}/${AZURITE_ACCOUNT};`;
  return BlobServiceClient.fromConnectionString(cs, { retryOptions: { maxTries: 1 } }).getContainerClient('conformance');
}
const makeStore = () => AzblobStore.fromContainer(containerVia(proxy.port), { timeoutMs: 3000 });

// Built as a variable so the fault hooks type-check before the suite on main declares them.
const options = {
  name: 'azblob',
  makeStore,
  minLeaseMs: 15_000,
  faults: {
    restart: () => server.restart(),
    // azurite forgets its last 5 s of writes on SIGKILL (Azure does not): "down" is a clean stop.
    kill: () => server.stopGracefully(),
    start: async () => void (await server.start()),
    freeze: async () => server.pause(),
    thaw: async () => server.resume(),
    cutConnections: async () => {
      proxy.cut('reset');
      proxy.heal();
    },
    deleteRecord: async (lock: string) => {
      const s = await makeStore();
      try {
        await s.deleteRecord(lock);
      } finally {
        await s.close();
      }
    },
    makeUnreachableStore: async () => AzblobStore.fromContainer(containerVia(await freePort()), { timeoutMs: 1000, checkContainer: false }),
  },
};
await storeConformanceSuite(options);
