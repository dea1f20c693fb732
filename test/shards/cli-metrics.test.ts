/**
 * `baton shards --listen` (issue 28: the metrics show why a shard's last owner stepped down):
 * two real members on SQLite, 4 shards, `--progress-timeout`; one of a's children is SIGSTOPped.
 * a's /metrics then counts one hung step-down for that shard, with the reason and note, while
 * its healthy shard (and every other) counts 0; b's /metrics shows it owns the moved shard;
 * `baton status --group` says why the shard's last owner gave it up. Bad `--listen` values: one
 * line, 64; a port in use: one line, 78.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, test } from 'node:test';
import { TempDir, cleanEnv, lines, pidAlive, runCli, waitFor } from '../harness/cli.js';
import { getJson, metric, scrape } from '../server/serve-harness.js';
import { FLEET_TIMING, ShardFleet } from './shard-fleet.js';

const PROGRESS_MS = 4000;
const SHARDS = 4;

describe('baton shards --listen', () => {
  test('SQLite: /metrics counts the hung step-down of one shard, with why; the healthy shards count 0; status --group says why', async () => {
    const fleet = new ShardFleet('metrics', SHARDS, { CHILD_MODE: 'notify', CHILD_EVERY: String(PROGRESS_MS / 10 / 1000) });
    const stopped: number[] = [];
    try {
      for (const id of ['a', 'b']) fleet.start(id, ['--progress-timeout', `${PROGRESS_MS}ms`, '--listen', '127.0.0.1:0']);
      const [aUrl, bUrl] = [await fleet.urlOf('a'), await fleet.urlOf('b')];
      const before = await fleet.settled('2,2');
      const lock = (s: number) => `${fleet.group}/shard/${s}`;
      const ofA = [...before].filter(([, l]) => l.identity === 'a').map(([s]) => s);

      // Before any hang: a owns its two shards (both gauges), every shard counts 0 hung step-downs.
      const first = await scrape(aUrl);
      for (let s = 0; s < SHARDS; s++) {
        const owns = ofA.includes(s) ? 1 : 0;
        assert.equal(metric(first, 'baton_is_leader', { lock: lock(s) }), owns, `baton_is_leader shard ${s}`);
        assert.equal(metric(first, 'leader_election_master_status', { name: lock(s) }), owns, `master status shard ${s}`);
        assert.equal(metric(first, 'baton_step_downs_total', { lock: lock(s), reason: 'hung' }), 0, `hung step-downs shard ${s}`);
        assert.equal(metric(first, 'baton_shard_exclusion_seconds', { lock: lock(s) }), 0);
      }
      assert.equal((await getJson(`${aUrl}/healthz`)).status, 200);
      assert.equal((await getJson(`${aUrl}/leader`)).status, 404, 'a shard member serves /metrics and /healthz only');

      const [hungShard, keptShard] = ofA as [number, number];
      const hungChild = before.get(hungShard)!;
      stopped.push(hungChild.pid);
      process.kill(hungChild.pid, 'SIGSTOP');
      const bound = PROGRESS_MS + FLEET_TIMING.leaseMs + 15_000;
      await waitFor('b to start the hung shard', () => fleet.starts(hungShard, 'b')[0], bound, 20).catch((err: Error) => {
        throw new Error(`${err.message}${fleet.context()}`);
      });
      await waitFor('the stopped child to be gone', () => !pidAlive(hungChild.pid), 5_000);

      // a: one hung step-down of that shard, why, not owned now; its healthy shard: 0, still owned.
      const after = await scrape(aUrl);
      assert.equal(metric(after, 'baton_step_downs_total', { lock: lock(hungShard), reason: 'hung' }), 1, fleet.context());
      const info = after.filter((x) => x.name === 'baton_last_step_down_info' && x.labels.lock === lock(hungShard));
      assert.equal(info.length, 1, 'one last-step-down series for the shard');
      assert.equal(info[0]!.value, 1);
      assert.equal(info[0]!.labels.reason, 'hung');
      assert.match(info[0]!.labels.note ?? '', /^no heartbeat within the progress timeout \(4s\)$/);
      assert.equal(metric(after, 'baton_is_leader', { lock: lock(hungShard) }), 0);
      const excludedFor = metric(after, 'baton_shard_exclusion_seconds', { lock: lock(hungShard) });
      assert.ok(excludedFor !== undefined && excludedFor >= 0 && excludedFor <= PROGRESS_MS / 1000, `exclusion left ${excludedFor}`);
      assert.equal(metric(after, 'baton_step_downs_total', { lock: lock(keptShard), reason: 'hung' }), 0);
      assert.equal(metric(after, 'baton_is_leader', { lock: lock(keptShard) }), 1);
      assert.equal(after.filter((x) => x.name === 'baton_last_step_down_info' && x.labels.lock === lock(keptShard)).length, 0, 'the healthy shard never stepped down');
      assert.equal((await getJson(`${aUrl}/healthz`)).status, 200);

      // b owns the moved shard and never stepped down from anything.
      const onB = await waitFor('b to report the moved shard', async () => {
        const b = await scrape(bUrl);
        return metric(b, 'leader_election_master_status', { name: lock(hungShard) }) === 1 && b;
      }, 5_000, 50);
      for (let s = 0; s < SHARDS; s++) assert.equal(metric(onB, 'baton_step_downs_total', { lock: lock(s), reason: 'hung' }), 0);

      // baton status --group says why the shard's last owner gave it up, in JSON and in text.
      const json = await runCli(['status', '--store', fleet.storeUrl, '--group', fleet.group, '--json'], { env: fleet.env });
      assert.equal(json.code, 0, json.stderr);
      const view = JSON.parse(json.stdout) as { assignment: { shard: number; lastStepDown: { holder: string; term: number; reason: string; note?: string; backoffMs?: number } | null }[] };
      const last = view.assignment[hungShard]!.lastStepDown;
      assert.deepEqual([last?.holder, last?.term, last?.reason, last?.backoffMs], ['a', hungChild.term, 'hung', PROGRESS_MS], json.stdout);
      assert.equal(view.assignment[keptShard]!.lastStepDown, null);
      const text = await runCli(['status', '--store', fleet.storeUrl, '--group', fleet.group], { env: fleet.env });
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, new RegExp(`shard ${hungShard}: b \\(term \\d+\\)\\n    last step-down: a \\(term ${hungChild.term}\\) at \\S+: hung \\(no heartbeat within the progress timeout \\(4s\\)\\); backed off 4s\\n`));
    } finally {
      await fleet.stop(stopped);
    }
  });

  test('bad --listen: one line, 64; a port in use: one line, 78', async () => {
    const home = new TempDir();
    const env = cleanEnv(home.path);
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const args = (listen: string) => ['shards', '--store', home.sqlite(), '--group', 'g', '--shards', '4', '--listen', listen, '--', 'true'];
      for (const bad of ['nope', '127.0.0.1:70000', 'host:']) {
        const r = await runCli(args(bad), { env });
        assert.equal(r.code, 64, `${bad}: ${r.stderr}`);
        assert.equal(lines(r.stderr).length, 1, r.stderr);
        assert.match(r.stderr, new RegExp(`--listen: "${bad}" is not an address`));
      }
      const r = await runCli(args(`127.0.0.1:${port}`), { env });
      assert.equal(r.code, 78, r.stderr);
      assert.equal(lines(r.stderr).length, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`shards: cannot listen on 127\\.0\\.0\\.1:${port}: EADDRINUSE`));
    } finally {
      taken.close();
      home.remove();
    }
  });
});
