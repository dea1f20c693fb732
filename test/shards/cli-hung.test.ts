// `baton shards --progress-timeout` on SQLite: the hung-shard scenario (hung-scenario.ts), and
// bad input for the new flags.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TempDir } from '../harness/cli.js';
import { runHungShardScenario } from './hung-scenario.js';
import { assertBadWatchdogFlags } from '../harness/hung-scenario.js';

describe('baton shards --progress-timeout', () => {
  test('SQLite: a SIGSTOPped shard child moves its shard to another member, and only that shard; not handed back', async () => {
    const dir = new TempDir();
    try {
      const { takeoverMs } = await runHungShardScenario({ storeUrl: dir.sqlite('shards.db'), name: 'sqlite' });
      console.log(`# SQLite: hung shard owned elsewhere ${Math.round(takeoverMs)} ms after SIGSTOP (progress timeout 4000 ms)`);
    } finally {
      dir.remove();
    }
  });

  test('bad flags: one line, 64 or 78, nothing made', () => assertBadWatchdogFlags((store) => ['shards', '--store', store, '--group', 'g', '--shards', '4']));
});
