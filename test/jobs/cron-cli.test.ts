/**
 * `baton cron` as real processes on a real (SQLite) store: three instances on an every-second
 * schedule while the leader is SIGKILLed twice (and replaced, as an autoscaler would). The
 * ledger and the commands' own log must agree that every slot ran at most once, and missed
 * slots must follow --missed. Short leases keep it fast; bounds are generous.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { SqliteStore } from '../../src/stores/sqlite/index.js';
import { readCronHead, type CronHead } from '../../src/jobs/cron-ledger.js';
import { BatonProcess, TempDir, cleanEnv, lines, runCli, waitFor } from '../harness/cli.js';

const TIMING = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms'];
const dir = new TempDir();
const started: BatonProcess[] = [];
after(async () => {
  await Promise.all(started.map((b) => b.kill()));
  dir.remove();
});

/** Each run logs its start, works for 300 ms, then logs its end. */
const LOGGING_COMMAND = 'echo "$BATON_SLOT $BATON_TERM $(date +%s%3N) $BATON_LOCK start" >> "$CRON_LOG"; sleep 0.3; echo "$BATON_SLOT $BATON_TERM $(date +%s%3N) $BATON_LOCK end" >> "$CRON_LOG"';

interface Run {
  slot: string;
  term: number;
  wallMs: number;
  /** When it logged its end, if it did. */
  endWallMs?: number;
}

function scenario(name: string, extra: string[] = []) {
  const storePath = dir.join(`${name}.db`);
  const log = dir.join(`${name}.log`);
  const env = cleanEnv(dir.path, { BATON_STORE: `sqlite:${storePath}`, CRON_LOG: log });
  const procs: BatonProcess[] = [];
  const spawnOne = () => {
    const b = new BatonProcess(
      ['cron', '--lock', name, '--schedule', '* * * * * *', ...extra, ...TIMING, '--', 'sh', '-c', LOGGING_COMMAND],
      { env },
    );
    started.push(b);
    procs.push(b);
    return b;
  };
  const withStore = async <T>(fn: (s: SqliteStore) => Promise<T>): Promise<T> => {
    const s = new SqliteStore(storePath);
    try {
      return await fn(s);
    } finally {
      await s.close();
    }
  };
  const head = () => withStore((s) => readCronHead(s.ledger, name));
  const runs = (): Run[] => {
    let text = '';
    try {
      text = readFileSync(log, 'utf8');
    } catch {
      return [];
    }
    const all = lines(text).map((l) => l.split(' '));
    const ends = new Map(all.filter((f) => f[4] === 'end').map((f) => [f[0], Number(f[2])]));
    return all
      .filter((f) => f[4] === 'start')
      .map(([slot, term, wall, lock]) => {
        assert.equal(lock, name);
        return { slot: slot!, term: Number(term), wallMs: Number(wall), endWallMs: ends.get(slot!) };
      });
  };
  /** Waits until the ledger shows `n` finished-ok slots of a term above `aboveTerm`; returns that term. */
  const okSlotsOfNewTerm = (aboveTerm: number, n: number) =>
    waitFor(`${n} ok slots of a term above ${aboveTerm}`, async () => {
      const h = await head();
      const ok = h?.slots.filter((s) => s.term > aboveTerm && s.status === 'ok') ?? [];
      return ok.length >= n ? ok[0]!.term : undefined;
    }, 20_000, 100);
  /** SIGKILLs the current leader while its command runs; returns when it died, by the wall clock. */
  const killLeader = async () => {
    await waitFor('a run in progress', async () => (await head())?.slots[0]?.status === 'running', 5_000, 20);
    const record = await withStore((s) => s.read(name));
    assert.ok(record?.holder, 'someone leads');
    const leader = procs.find((p) => p.pid === record.metadata.pid && !p.done);
    assert.ok(leader, `the leader (pid ${record.metadata.pid}) is one of ours`);
    leader.signal('SIGKILL');
    await leader.exited;
    return { killedAt: Date.now(), term: record.term };
  };
  const stopAll = async () => {
    for (const p of procs) p.signal('SIGTERM');
    return Promise.all(procs.filter((p) => !p.done || p.child.signalCode !== 'SIGKILL').map((p) => p.waitForExit(15_000)));
  };
  return { env, spawnOne, head, runs, okSlotsOfNewTerm, killLeader, stopAll, procs };
}

/** The checks every scenario shares: ledger and log agree, and nothing ran twice. */
function assertAtMostOnce(head: CronHead, runs: Run[]) {
  const logged = runs.map((r) => r.slot);
  assert.equal(new Set(logged).size, logged.length, `a slot ran twice: ${logged.join(' ')}`);
  const bySlot = new Map(head.slots.map((s) => [s.slot, s]));
  assert.equal(bySlot.size, head.slots.length, 'the ledger claimed a slot twice');
  for (const r of runs) {
    const claim = bySlot.get(r.slot);
    assert.ok(claim, `slot ${r.slot} ran without a claim in the ledger`);
    assert.equal(claim.term, r.term, `slot ${r.slot} ran with term ${r.term} but was claimed by term ${claim.term}`);
  }
  for (const s of head.slots) {
    if (s.status === 'ok') assert.ok(runs.find((r) => r.slot === s.slot)?.endWallMs, `ledger says ${s.slot} ran ok, the log disagrees`);
  }
  // No overlap: a run of one term ended before any run of a newer term started (one host, one wall clock).
  for (const r of runs) {
    const newer = runs.filter((x) => x.term > r.term).map((x) => x.wallMs);
    if (r.endWallMs !== undefined && newer.length) assert.ok(r.endWallMs < Math.min(...newer), `${r.slot} (term ${r.term}) ran into a newer term's run`);
  }
  // Claims go forward in time and never back in term.
  const ordered = [...head.slots].sort((a, b) => a.slotMs - b.slotMs);
  for (let i = 1; i < ordered.length; i++) assert.ok(ordered[i]!.term >= ordered[i - 1]!.term, `slot ${ordered[i]!.slot} has an older term than the slot before it`);
  // Nothing is left "running": the last leader stopped cleanly, earlier ones were marked cut by their successors.
  for (const s of head.slots) assert.ok(s.status === 'ok' || s.status === 'cut', `slot ${s.slot} ended ${s.status}`);
}

/** First claim of each term, oldest first. */
function firstClaims(head: CronHead) {
  const byTerm = new Map<number, CronHead['slots'][number]>();
  for (const s of [...head.slots].sort((a, b) => a.slotMs - b.slotMs)) if (!byTerm.has(s.term)) byTerm.set(s.term, s);
  return [...byTerm.values()];
}

test('three instances, leader SIGKILLed twice: every slot at most once, ledger = log, missed slots caught up (latest)', async () => {
  const s = scenario('every-second');
  for (let i = 0; i < 3; i++) s.spawnOne();
  const term1 = await s.okSlotsOfNewTerm(0, 4);
  const kill1 = await s.killLeader();
  assert.equal(kill1.term, term1);
  s.spawnOne();
  const term2 = await s.okSlotsOfNewTerm(term1, 4);
  const kill2 = await s.killLeader();
  assert.equal(kill2.term, term2);
  s.spawnOne();
  const term3 = await s.okSlotsOfNewTerm(term2, 4);

  // baton status shows the last slots and their outcome, in text and JSON.
  const text = await runCli(['status', '--lock', 'every-second'], { env: s.env });
  assert.equal(text.code, 0);
  assert.match(text.stdout, /\ncron every-second: "\* \* \* \* \* \*" \(UTC, missed: latest\); ledger term \d+; last slots:\n/);
  assert.match(text.stdout, /\n {2}\S+Z {2}ok {6}exit 0 {2}term \d+ on \S+ pid \d+/);
  const json = await runCli(['status', '--lock', 'every-second', '--json'], { env: s.env });
  const cron = JSON.parse(json.stdout).cron as { lock: string; slots: Array<{ status: string; term: number }> };
  assert.equal(cron.lock, 'every-second');
  assert.ok(cron.slots.length >= 5 && cron.slots.some((x) => x.status === 'ok' && x.term === term3));
  // Without --lock: the array of every lock carries the cron slots on that lock's object.
  const all = JSON.parse((await runCli(['status', '--json'], { env: s.env })).stdout) as Array<{ lock: string; cron?: { lock: string; slots: unknown[] } }>;
  const row = all.find((r) => r.lock === 'every-second');
  assert.ok(row, 'the cron lock is listed');
  assert.equal(row.cron?.lock, 'every-second');
  assert.ok((row.cron?.slots.length ?? 0) >= 5, 'its slots are there');

  const results = await s.stopAll();
  for (const r of results) assert.equal(r.code, 0, `a graceful stop exits 0: ${r.stderr}`);
  const head = (await s.head())!;
  const runs = s.runs();
  assertAtMostOnce(head, runs);
  assert.deepEqual([...new Set(head.slots.map((x) => x.term))].sort((a, b) => a - b).slice(-3), [term1, term2, term3]);
  // Each kill landed while a slot was claimed and its outcome not yet recorded: the successor
  // records it cut, and it is not run again.
  const cut = head.slots.filter((x) => x.status === 'cut');
  assert.deepEqual(cut.filter((x) => x.term !== term3).map((x) => x.term), [term2, term1]);
  for (const x of cut) assert.match(x.reason ?? '', x.term === term3 ? /interrupted by SIGTERM/ : /took over/);

  // --missed latest: each successor's first claim is the newest slot that came due during the
  // failover, run late — but less than one interval (1 s) after it came due.
  const [, second, third] = firstClaims(head).filter((c) => c.term >= term1);
  for (const [claim, kill] of [[second!, kill1], [third!, kill2]] as const) {
    assert.ok(claim.late, `term ${claim.term} caught up ${claim.slot}`);
    assert.ok(claim.slotMs > kill.killedAt - 1000, `the caught-up slot ${claim.slot} came due after the kill`);
    const ran = runs.find((r) => r.slot === claim.slot);
    if (ran) assert.ok(ran.wallMs - claim.slotMs < 2_000, `caught up ${ran.wallMs - claim.slotMs}ms after it came due`);
  }
  // Other late runs happen only when a slot came due while the previous run was still going (or
  // the machine stalled); every one of them still ran less than one interval late.
  const late = head.slots.filter((x) => x.late);
  for (const x of late) assert.ok(Date.parse(x.startedAt) - x.slotMs < 1_500, `late slot ${x.slot} was claimed ${Date.parse(x.startedAt) - x.slotMs}ms after it came due`);
  console.log(`cron scenario: ${runs.length} runs, ${head.slots.length} claims, terms ${term1}/${term2}/${term3}, ` +
    `failovers caught up ${second!.slot.slice(11, 19)} and ${third!.slot.slice(11, 19)}, late runs ${late.length}, cut: ${cut.length}`);
});

test('--missed skip: the successor never runs a slot late; the missed ones are counted as skipped', async () => {
  const s = scenario('skipper', ['--missed', 'skip']);
  s.spawnOne();
  s.spawnOne();
  const term1 = await s.okSlotsOfNewTerm(0, 2);
  const kill = await s.killLeader();
  const term2 = await s.okSlotsOfNewTerm(term1, 2);
  await s.stopAll();
  const head = (await s.head())!;
  assertAtMostOnce(head, s.runs());
  assert.deepEqual(head.slots.filter((x) => x.late), [], 'no slot ran late');
  const first = firstClaims(head).find((c) => c.term === term2)!;
  // The successor could not lead before the 2 s lease ran out: its first run is an on-time slot after that.
  assert.ok(first.slotMs >= kill.killedAt + 1_000, `first slot of the successor ${first.slot} is ${first.slotMs - kill.killedAt}ms after the kill`);
  assert.ok((first.skippedBefore ?? 0) >= 1, 'the slots that came due without a leader were skipped and counted');
  assert.equal(head.missed, 'skip');
});
