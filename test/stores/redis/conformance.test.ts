// The public conformance suite, with every fault hook (restart is kill + start), on a real redis-server 7 (AOF,
// appendfsync always, expired keyspace events on) on a free loopback port. Store handles talk to
// it through a loopback TCP proxy, so that `cutConnections` can drop them while the server runs.
import { after } from 'node:test';
import { Redis } from 'ioredis';
import { storeConformanceSuite } from '../../../src/testing/index.js';
import { RedisStore } from '../../../src/stores/redis/index.js';
import { RedisServer, freePort } from '../../../infra/servers/index.js';
import { PartitionProxy } from '../../../infra/proxy.js';

const server = await new RedisServer().start();
const proxy = new PartitionProxy(server.port);
await proxy.listen();
after(async () => {
  await proxy.close();
  await server.stop();
});

/** admin runs commands on a connection of its own, straight to the server (which may have restarted since the last call). */
async function admin(run: (r: Redis) => Promise<unknown>): Promise<void> {
  const r = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1 });
  r.on('error', () => {});
  try {
    await run(r);
  } finally {
    r.disconnect();
  }
}

await storeConformanceSuite({
  name: 'redis',
  makeStore: async () => new RedisStore({ url: `redis://127.0.0.1:${proxy.port}` }).verify(),
  callTimeoutMs: 1_500,
  faults: {
    kill: () => server.kill(),
    start: async () => void (await server.start()),
    freeze: async () => server.pause(),
    thaw: async () => server.resume(),
    cutConnections: async () => proxy.cutAll(),
    cutFeed: () => admin((r) => r.call('CLIENT', 'KILL', 'TYPE', 'pubsub')),
    deleteRecord: (lock) => admin((r) => r.del(`baton:{${lock}}:lease`)),
    makeUnreachableStore: async () => new RedisStore({ url: `redis://127.0.0.1:${await freePort()}`, timeoutMs: 300 }),
  },
});
