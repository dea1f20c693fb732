// The conformance suite against a real PostgreSQL 15 started on a free loopback port.
import { after } from 'node:test';
import { storeConformanceSuite } from '../../src/testing/index.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { PostgresServer } from '../../infra/servers/index.js';

const server = await new PostgresServer().start();
after(() => server.stop());

// Every handle has its own pool and LISTEN session, as separate processes would.
await storeConformanceSuite({
  name: 'postgres',
  makeStore: async () => new PostgresStore({ connectionString: server.url }),
  restart: () => server.restart(),
});
