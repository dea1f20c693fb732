// The conformance suite on a mysql2 pool the application owns (MysqlStore.open({ pool })), on a
// table of its own name: every handle shares the pool, and closing a handle leaves it open. Its
// own server, so no other file's restarts land in the middle of it.
import { after } from 'node:test';
import { createPool } from 'mysql2/promise';
import { storeConformanceSuite } from '../../../src/testing/index.js';
import { MysqlStore } from '../../../src/stores/mysql/index.js';
import { MariaDBServer } from '../../../infra/servers/index.js';

const server = await new MariaDBServer().start();
after(() => server.stop());

const pool = createPool({ uri: server.url, connectionLimit: 8 });
after(() => pool.end());
await storeConformanceSuite({
  name: 'mysql (application pool)',
  makeStore: () => MysqlStore.open({ pool, table: 'app_leases' }),
});
