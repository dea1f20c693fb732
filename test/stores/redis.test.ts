import { after } from 'node:test';
import { storeConformanceSuite } from '../../src/testing/index.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { RedisServer } from '../../infra/servers/index.js';

// A real redis-server 7 (AOF, appendfsync always, expired keyspace events on), on a free port.
const server = await new RedisServer().start();
after(() => server.stop());

await storeConformanceSuite({
  name: 'redis',
  makeStore: async () => new RedisStore({ url: server.url }).verify(),
  restart: () => server.restart(),
});
