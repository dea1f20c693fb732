// The public conformance suite against a private MariaDB 10.11 (its own datadir, a free loopback
// port). Every handle has its own pool, as separate processes would.
import { after } from 'node:test';
import { storeConformanceSuite } from '../../../src/testing/index.js';
import { PartitionProxy } from '../../../infra/proxy.js';
import { MysqlStore } from '../../../src/stores/mysql/index.js';
import { MariaDBServer, freePort } from '../../../infra/servers/index.js';

const server = await new MariaDBServer().start();
// Handles reach the server through a TCP proxy, so the suite can cut their connections.
const proxy = new PartitionProxy(server.port);
await proxy.listen();
after(async () => {
  await proxy.close();
  await server.stop();
});

const open = () => MysqlStore.open({ url: server.url.replace(`:${server.port}/`, `:${proxy.port}/`) });

/** The fault hooks of the suite. */
const faults = {
  kill: () => server.kill(),
  start: async () => void (await server.start()),
  freeze: async () => server.pause(),
  thaw: async () => server.resume(),
  cutConnections: async () => proxy.cutAll(),
  deleteRecord: async (lock: string) => void server.sql(`DELETE FROM baton.baton_leases WHERE k = 'lease/${lock.replace(/'/g, "''")}'`),
  makeUnreachableStore: async () => MysqlStore.open({ url: `mysql://baton:baton@127.0.0.1:${await freePort()}/baton?timeout=500ms` }),
};

await storeConformanceSuite({
  name: 'mysql (MariaDB)',
  makeStore: open,
  faults,
});

