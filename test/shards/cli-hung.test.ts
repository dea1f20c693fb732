// `baton shards --progress-timeout` on SQLite: the hung-shard scenario (hung-scenario.ts), and
// bad input for the new flags.
import assert from 'node:assert/strict';
import { readdirSync, mkdirSync } from 'node:fs';
import { describe, test } from 'node:test';
import { TempDir, cleanEnv, lines, runCli } from '../harness/cli.js';
import { runHungShardScenario } from './hung-scenario.js';

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

  test('bad flags: one line, 64 or 78, nothing made', async () => {
    const home = new TempDir();
    const tmp = home.join('tmp');
    mkdirSync(tmp);
    const env = cleanEnv(home.path, { TMPDIR: tmp });
    const cases: [string[], number, RegExp][] = [
      [['--progress-timeout', 'soon'], 78, /--progress-timeout/],
      [['--progress-timeout', '10ms'], 78, /--progress-timeout: "10ms" must be between 100ms and 24h/],
      [['--health-interval', '1s'], 64, /--health-interval needs --health-cmd/],
      [['--health-failures', '2'], 64, /--health-failures needs --health-cmd/],
      [['--health-cmd', 'true', '--health-failures', '0'], 78, /--health-failures: "0" is not a whole number/],
      [['--health-cmd', ' '], 78, /--health-cmd: the command is empty/],
    ];
    try {
      for (const [flags, code, message] of cases) {
        const r = await runCli(['shards', '--store', home.sqlite(), '--group', 'g', '--shards', '4', ...flags, '--', 'true'], { env });
        assert.equal(r.code, code, `${flags.join(' ')}: ${r.stderr}`);
        assert.equal(lines(r.stderr).length, 1, r.stderr);
        assert.match(r.stderr, message);
      }
      assert.deepEqual(readdirSync(tmp), [], 'nothing made in TMPDIR');
      assert.deepEqual(readdirSync(home.path).filter((n) => n.startsWith('baton')), [], 'no store file made');
    } finally {
      home.remove();
    }
  });
});
