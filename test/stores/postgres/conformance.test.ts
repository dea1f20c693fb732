// The public conformance suite, with every fault hook (restart is kill + start), on a real PostgreSQL 15 on a free loopback
// port. Every handle has its own pool and LISTEN session, as separate processes would, and talks
// to the server through a loopback TCP proxy so that `cutConnections` can drop them all.
import { after } from 'node:test';
import pg from 'pg';
import { storeConformanceSuite } from '../../../src/testing/index.js';
import { PostgresStore } from '../../../src/stores/postgres/index.js';
import { PostgresServer, freePort } from '../../../infra/servers/index.js';
import { PartitionProxy } from '../../../infra/proxy.js';

const server = await new PostgresServer().start();
const proxy = new PartitionProxy(server.port);
await proxy.listen();
after(async () => {
  await proxy.close();
  await server.stop();
});

/** admin runs one statement on its own short-lived connection (the server may have restarted). */
async function admin(text: string, values: unknown[] = []): Promise<void> {
  const c = new pg.Client({ connectionString: server.url });
  c.on('error', () => {});
  await c.connect();
  try {
    await c.query(text, values);
  } finally {
    await c.end().catch(() => {});
  }
}

const viaProxy = server.url.replace(`:${server.port}/`, `:${proxy.port}/`);
await storeConformanceSuite({
  name: 'postgres',
  makeStore: async () => new PostgresStore({ connectionString: `${viaProxy}?application_name=baton_conformance&heartbeat=500ms` }),
  callTimeoutMs: 3_000,
  faults: {
    kill: () => server.kill(),
    start: async () => void (await server.start()),
    freeze: async () => server.pause(),
    thaw: async () => server.resume(),
    cutConnections: async () => proxy.cutAll(),
    // The LISTEN sessions: their last statement is the LISTEN or the feed's heartbeat probe.
    cutFeed: () =>
      admin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE application_name = 'baton_conformance' AND (query LIKE 'LISTEN%' OR query = 'SELECT 1')`),
    deleteRecord: (lock) => admin('DELETE FROM baton_leases WHERE lock = $1', [lock]),
    makeUnreachableStore: async () => new PostgresStore({ connectionString: `postgres://baton@127.0.0.1:${await freePort()}/app?connect_timeout=2` }),
  },
});
