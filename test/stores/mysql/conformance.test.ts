// The public conformance suite against a private MariaDB 10.11 (its own datadir, a free loopback
// port). Every handle has its own pool, as separate processes would.
import { after } from 'node:test';
import { storeConformanceSuite } from '../../../src/testing/index.js';
import { MysqlStore } from '../../../src/stores/mysql/index.js';
import { MariaDBServer, freePort } from '../../../infra/servers/index.js';

const server = await new MariaDBServer().start();
after(() => server.stop());

const open = () => MysqlStore.open({ url: server.url });

/** The fault hooks of the suite (see common notes); `faults:` is passed once the suite takes it. */
const faults = {
  restart: () => server.restart(),
  kill: () => server.kill(),
  start: async () => void (await server.start()),
  freeze: async () => server.pause(),
  thaw: async () => server.resume(),
  deleteRecord: async (lock: string) => void server.sql(`DELETE FROM baton.baton_leases WHERE k = 'lease/${lock.replace(/'/g, "''")}'`),
  makeUnreachableStore: async () => MysqlStore.open({ url: `mysql://baton:baton@127.0.0.1:${await freePort()}/baton?timeout=500ms` }),
};

await storeConformanceSuite({
  name: 'mysql (MariaDB)',
  makeStore: open,
  restart: faults.restart,
});

void faults;
