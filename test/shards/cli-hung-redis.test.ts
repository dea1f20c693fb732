// `baton shards --progress-timeout` on a Redis server (a network store): the hung-shard scenario (hung-scenario.ts).
import { after, test } from 'node:test';
import { RedisServer } from '../../infra/servers/index.js';
import { runHungShardScenario } from './hung-scenario.js';

const server = await new RedisServer().start();
after(() => server.stop());

test('baton shards --progress-timeout, Redis: a SIGSTOPped shard child moves its shard to another member, and only that shard; not handed back', async () => {
  const { takeoverMs } = await runHungShardScenario({ storeUrl: server.url, name: 'redis' });
  console.log(`# Redis: hung shard owned elsewhere ${Math.round(takeoverMs)} ms after SIGSTOP (progress timeout 4000 ms)`);
});
