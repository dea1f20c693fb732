// The shard-group scenario (scenario.ts) with real processes over a Redis server: a network store.
import { after } from 'node:test';
import { RedisServer } from '../../infra/servers/index.js';
import { shardScenario } from './scenario.js';

const server = await new RedisServer().start();
after(() => server.stop());
shardScenario('Redis', server.url);
