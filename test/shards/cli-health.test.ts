/**
 * `baton shards --health-cmd` (issue 28) with real processes: two members on SQLite, 4 shards,
 * each shard's health command `test ! -e "$LOGS/sick-$BATON_SHARD-$BATON_IDENTITY"` — the test
 * makes one shard's work unhealthy on member a only by creating that file. Asserted, as facts:
 *
 * 1. a stops that shard's child (its `stop` line, then gone) and says once why;
 * 2. b runs the shard within the bound watchdog.md gives — (failures + 1) × interval + the kill
 *    grace + 2 retry periods, plus the child's start — with a slack for a loaded machine;
 * 3. a's other shard keeps its child; a does not run the shard again during its back-off (nor
 *    for a while after), though its own check would fail it again at once;
 * 4. the ledger says why (`baton status --group --json`), and no other shard was ever given up.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { delay, pidAlive, runCli, waitFor } from '../harness/cli.js';
import { FLEET_TIMING, ShardFleet } from './shard-fleet.js';

const HEALTH = { intervalMs: 1000, failures: 3 } as const;
const SHARDS = 4;

test('baton shards --health-cmd, SQLite: a shard failing its check on one member moves to the other, and not back during the back-off', async () => {
  const fleet = new ShardFleet('health', SHARDS, { CHILD_MODE: 'none' });
  try {
    for (const id of ['a', 'b']) {
      fleet.start(id, ['--health-cmd', 'test ! -e "$LOGS/sick-$BATON_SHARD-$BATON_IDENTITY"', '--health-interval', `${HEALTH.intervalMs}ms`, '--health-failures', String(HEALTH.failures)]);
    }
    const before = await fleet.settled('2,2');
    const [sickShard, keptShard] = [...before].filter(([, l]) => l.identity === 'a').map(([s]) => s) as [number, number];
    const sickChild = before.get(sickShard)!;
    const keptChild = before.get(keptShard)!;
    const a = fleet.members.get('a')!;

    const sickAt = performance.now();
    writeFileSync(fleet.dir.join(`sick-${sickShard}-a`), '');

    // 1–2. b runs the shard; a's child of it was stopped first and is gone.
    const t = FLEET_TIMING;
    const bound = (HEALTH.failures + 1) * HEALTH.intervalMs + (t.leaseMs - t.renewDeadlineMs) / 2 + 2 * t.retryMs;
    const next = await waitFor('b to run the unhealthy shard', () => fleet.starts(sickShard, 'b')[0], bound + 15_000, 20).catch((err: Error) => {
      throw new Error(`${err.message}${fleet.context()}`);
    });
    const movedMs = performance.now() - sickAt;
    console.log(`# shard moved ${Math.round(movedMs)} ms after its check began to fail (bound ${bound} ms before the child's start, + 15 s slack allowed)`);
    await waitFor("a's child of the shard to be gone", () => !pidAlive(sickChild.pid), 5_000);
    const log = fleet.logOf(sickShard);
    const stop = log.findIndex((l) => l.kind === 'stop' && l.pid === sickChild.pid);
    assert.ok(stop >= 0 && stop < log.findIndex((l) => l.pid === next.pid), `a's child stopped (SIGTERM) before b's started${fleet.context()}`);
    assert.ok(next.term > sickChild.term, 'the term grew');
    const why = new RegExp(`shard ${sickShard} of "${fleet.group}" \\(term ${sickChild.term}\\) is hung: the health command failed 3 times in a row \\(exit 1\\); stopping sh and giving the shard up`, 'g');
    await waitFor('a to say it backs off', () => /released \(hung\)/.test(a.stderr), 5_000);
    assert.equal(a.stderr.match(why)?.length, 1, `one line says why${fleet.context()}`);
    assert.match(a.stderr, new RegExp(`shard ${sickShard}: released \\(hung\\); not taken again here for 3s \\(hung 1 time in a row\\)`));

    // 3. a's other shard kept its child; a does not take the shard back: through the back-off
    //    (interval × failures = 3 s) and as long again after it.
    const watchUntil = performance.now() + 2 * HEALTH.intervalMs * HEALTH.failures;
    while (performance.now() < watchUntil) {
      assert.equal(fleet.starts(sickShard, 'a').length, 1, `the shard went back to a${fleet.context()}`);
      assert.ok(pidAlive(next.pid), `b's child of the shard keeps running${fleet.context()}`);
      await delay(100);
    }
    assert.equal(fleet.running().get(keptShard)?.pid, keptChild.pid, `a's other shard kept its child${fleet.context()}`);
    await fleet.settled('2,2', 20_000);

    // 4. The ledger says why; no other shard was given up, on either member.
    const status = await runCli(['status', '--store', fleet.storeUrl, '--group', fleet.group, '--json'], { env: fleet.env });
    assert.equal(status.code, 0, status.stderr);
    const view = JSON.parse(status.stdout) as { assignment: { lastStepDown: { holder: string; term: number; reason: string; note?: string; backoffMs?: number } | null }[] };
    const last = view.assignment[sickShard]!.lastStepDown;
    assert.deepEqual([last?.holder, last?.term, last?.reason, last?.note, last?.backoffMs], ['a', sickChild.term, 'hung', 'the health command failed 3 times in a row (exit 1)', 3000], status.stdout);
    for (let s = 0; s < SHARDS; s++) if (s !== sickShard) assert.equal(view.assignment[s]!.lastStepDown, null, `shard ${s} was never given up`);
    const hungLines = [...fleet.members.values()].reduce((n, m) => n + (m.stderr.match(/ is hung: /g)?.length ?? 0), 0);
    assert.equal(hungLines, 1, `one hung shard in all${fleet.context()}`);
    for (const m of fleet.members.values()) assert.equal(m.done, false, 'every member keeps going');
  } finally {
    await fleet.stop();
  }
});
