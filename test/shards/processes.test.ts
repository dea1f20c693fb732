// The shard-group scenario (scenario.ts) with real processes over one SQLite file.
import { after } from 'node:test';
import { TempDir } from '../harness/cli.js';
import { shardScenario } from './scenario.js';

const dir = new TempDir();
after(() => dir.remove());
shardScenario('SQLite', dir.sqlite('shards.db'));
