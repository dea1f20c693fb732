/**
 * `baton cron --progress-timeout` (issue 28, docs/watchdog.md) as real processes on a real
 * (SQLite) store: two instances on an every-second schedule. The very first slot's command
 * touches BATON_HEARTBEAT_FILE twice, then goes quiet ignoring SIGTERM (only the SIGKILL after
 * the grace ends it); every other slot's command heartbeats and finishes in ~300 ms. Asserted:
 * the hung command is dead, its slot is recorded cut as hung and never run again, the leader
 * stepped down (reason 'hung') and the other instance runs the later slots, no slot runs twice,
 * and no later slot started while the hung command was still alive. Bounds are generous.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { SqliteStore } from '../../src/stores/sqlite/index.js';
import { readCronHead } from '../../src/jobs/cron-ledger.js';
import { BatonProcess, TempDir, cleanEnv, lines, pidAlive, runCli, waitFor } from '../harness/cli.js';

const TIMING = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms'];
const PROGRESS = '2s';
const dir = new TempDir();
const started: BatonProcess[] = [];
after(async () => {
  await Promise.all(started.map((b) => b.kill()));
  dir.remove();
});

// Log line: SLOT TERM IDENTITY WHAT PID [hung-alive=yes|no]
const COMMAND = [
  'log() { echo "$BATON_SLOT $BATON_TERM $BATON_IDENTITY $1 $$ $2" >> "$CRON_LOG"; }',
  'touch "$BATON_HEARTBEAT_FILE"',
  'if mkdir "$HANG_MARK" 2>/dev/null; then',
  '  echo $$ > "$HANG_PID"; log hang',
  '  sleep 0.3; touch "$BATON_HEARTBEAT_FILE"',
  // From here on no heartbeat, and SIGTERM is ignored (by sleep too: an ignored signal is inherited).
  '  trap "" TERM',
  '  sleep 600 & echo $! > "$HANG_SLEEP_PID"; wait; log after-hang',
  '  exit 0',
  'fi',
  'alive=no; kill -0 "$(cat "$HANG_PID")" 2>/dev/null && alive=yes',
  'log start "hung-alive=$alive"',
  'sleep 0.3; touch "$BATON_HEARTBEAT_FILE"',
  'log end',
].join('\n');

test('cron: a slot whose command stops heartbeating is killed and recorded hung; the other instance runs the later slots, none twice', async () => {
  const lock = 'hung-cron';
  const storePath = dir.join('hung.db');
  const log = dir.join('cron.log');
  const env = cleanEnv(dir.path, {
    BATON_STORE: `sqlite:${storePath}`,
    CRON_LOG: log,
    HANG_MARK: dir.join('hang-mark'),
    HANG_PID: dir.join('hang.pid'),
    HANG_SLEEP_PID: dir.join('hang-sleep.pid'),
  });
  const batons = new Map<string, BatonProcess>();
  for (const id of ['cron-a', 'cron-b']) {
    const b = new BatonProcess(['cron', '--lock', lock, '--identity', id, '--schedule', '* * * * * *', '--progress-timeout', PROGRESS, ...TIMING, '--', 'sh', '-c', COMMAND], { env });
    started.push(b);
    batons.set(id, b);
  }
  const context = () => `\nlog:\n${logText()}\n` + [...batons].map(([id, b]) => `--- ${id} stderr:\n${b.stderr}`).join('\n');
  const logText = () => {
    try {
      return readFileSync(log, 'utf8');
    } catch {
      return '';
    }
  };
  const entries = () => lines(logText()).map((l) => {
    const [slot, term, identity, what, pid, note] = l.split(' ');
    return { slot: slot!, term: Number(term), identity: identity!, what: what!, pid: Number(pid), note };
  });
  const head = async () => {
    const s = new SqliteStore(storePath);
    try {
      return await readCronHead(s.ledger, lock);
    } finally {
      await s.close();
    }
  };

  const hung = await waitFor('the first slot to start its hanging command', () => entries().find((e) => e.what === 'hang'), 30_000, 50);
  const hungBaton = batons.get(hung.identity)!;
  const other = [...batons.keys()].find((id) => id !== hung.identity)!;
  // Three slots run to the end by the other instance, in a newer term.
  const later = await waitFor('three ok slots of a newer term', async () => {
    const h = await head();
    const ok = h?.slots.filter((s) => s.term > hung.term && s.status === 'ok') ?? [];
    return ok.length >= 3 ? ok : undefined;
  }, 45_000, 100);

  // The hung command (the shell and its sleep) is dead, killed before it logged anything more.
  const sleepPid = Number(readFileSync(env.HANG_SLEEP_PID!, 'utf8').trim());
  assert.ok(!pidAlive(hung.pid), `the hung shell ${hung.pid} is dead${context()}`);
  assert.ok(!pidAlive(sleepPid), `the hung shell's sleep ${sleepPid} is dead${context()}`);
  assert.equal(entries().filter((e) => e.what === 'after-hang').length, 0, `SIGTERM was ignored, so only SIGKILL ended it${context()}`);

  // The hung instance said why, once, and backs off; it is still running (cron keeps going).
  const hungLines = lines(hungBaton.stderr).filter((l) => l.includes('is hung'));
  assert.equal(hungLines.length, 1, context());
  assert.match(hungLines[0]!, new RegExp(`the work under "${lock}" is hung: no heartbeat within the progress timeout \\(2s\\); stopping sh \\(slot ${hung.slot.replace(/\./g, '\\.')}\\) and stepping down`));
  assert.match(hungBaton.stderr, /released "hung-cron"; campaigning again in 2s \(hung 1 time in a row\)/);
  assert.equal(hungBaton.done, false, context());
  assert.doesNotMatch(batons.get(other)!.stderr, /is hung/, context());

  const h = (await head())!;
  // The hung slot: claimed once, by the hung term, recorded cut as hung; that term claimed nothing else.
  const hungRecord = h.slots.filter((s) => s.slot === hung.slot);
  assert.equal(hungRecord.length, 1, context());
  assert.equal(hungRecord[0]!.term, hung.term);
  assert.equal(hungRecord[0]!.identity, hung.identity);
  assert.equal(hungRecord[0]!.status, 'cut');
  assert.match(hungRecord[0]!.reason ?? '', /^hung: no heartbeat within the progress timeout \(2s\)$/);
  assert.equal(hungRecord[0]!.exitCode, 137, 'ended by SIGKILL');
  assert.deepEqual(h.slots.filter((s) => s.term === hung.term).map((s) => s.slot), [hung.slot], 'the hung term claimed no other slot');
  // The next slot is the other instance's (later ones may change hands again if a lease is lost
  // on a loaded machine: that is not asserted), and none started while the hung command lived.
  const next = h.slots.filter((s) => s.term > hung.term).sort((a, b) => a.slotMs - b.slotMs)[0]!;
  assert.equal(next.identity, other, context());
  assert.ok(later.length >= 3);
  const starts = entries().filter((e) => e.what === 'start');
  assert.ok(starts.length >= 3, context());
  for (const e of starts) {
    assert.ok(e.term > hung.term, `a slot ran in the hung term${context()}`);
    assert.equal(e.note, 'hung-alive=no', `slot ${e.slot} started while the hung command was alive${context()}`);
  }
  // No slot ran twice, and every run had its claim, with its term.
  const ran = entries().filter((e) => e.what === 'start' || e.what === 'hang');
  assert.equal(new Set(ran.map((e) => e.slot)).size, ran.length, `a slot ran twice${context()}`);
  assert.equal(new Set(h.slots.map((s) => s.slot)).size, h.slots.length, 'the ledger claimed a slot twice');
  for (const e of ran) assert.equal(h.slots.find((s) => s.slot === e.slot)?.term, e.term, `slot ${e.slot} ran without its claim${context()}`);

  // baton status: why the last leader stepped down (its list of the last slots moves on every
  // second, so the hung slot itself is checked in the ledger above, not in that list).
  const status = await runCli(['status', '--lock', lock], { env });
  assert.equal(status.code, 0, status.stderr);
  assert.match(status.stdout, new RegExp(`last step-down: ${hung.identity} \\(term ${hung.term}\\) at \\S+: hung \\(no heartbeat within the progress timeout \\(2s\\)\\)`), status.stdout);

  for (const b of batons.values()) b.signal('SIGTERM');
  for (const [id, b] of batons) assert.equal((await b.waitForExit(15_000)).code, 0, `${id}: ${b.stderr}`);
  console.log(`cron hung: slot ${hung.slot} hung in term ${hung.term} on ${hung.identity}; ${starts.length} later runs on ${other}`);
});

test('cron --health-cmd: a slot whose health command keeps failing is stopped and recorded hung; the other instance runs the later slots', async () => {
  const lock = 'unhealthy-cron';
  const storePath = dir.join('health.db');
  const log = dir.join('health.log');
  const badSlot = dir.join('bad-slot');
  const env = cleanEnv(dir.path, { BATON_STORE: `sqlite:${storePath}`, CRON_LOG: log, HANG_MARK: dir.join('health-mark'), BAD_SLOT: badSlot });
  // The first slot's command names its slot as unhealthy and waits; the health command (run
  // with the slot's environment) fails for that slot only.
  const command = [
    'if mkdir "$HANG_MARK" 2>/dev/null; then echo "$BATON_SLOT" > "$BAD_SLOT"; echo "$BATON_SLOT $BATON_TERM $BATON_IDENTITY hang $$" >> "$CRON_LOG"; exec sleep 600; fi',
    'echo "$BATON_SLOT $BATON_TERM $BATON_IDENTITY start $$" >> "$CRON_LOG"; sleep 0.2',
  ].join('\n');
  const health = `test "$(cat "${badSlot}" 2>/dev/null)" != "$BATON_SLOT"`;
  const batons = ['health-a', 'health-b'].map((id) => {
    const b = new BatonProcess(['cron', '--lock', lock, '--identity', id, '--schedule', '* * * * * *', '--health-cmd', health, '--health-interval', '300ms', '--health-failures', '2', ...TIMING, '--', 'sh', '-c', command], { env });
    started.push(b);
    return b;
  });
  const context = () => batons.map((b) => `--- stderr:\n${b.stderr}`).join('\n');
  const entries = () => {
    let text = '';
    try {
      text = readFileSync(log, 'utf8');
    } catch {
      return [];
    }
    return lines(text).map((l) => {
      const [slot, term, identity, what, pid] = l.split(' ');
      return { slot: slot!, term: Number(term), identity: identity!, what: what!, pid: Number(pid) };
    });
  };
  const hung = await waitFor('the first slot to start its hanging command', () => entries().find((e) => e.what === 'hang'), 30_000, 50);
  await waitFor('two later slots run', () => entries().filter((e) => e.what === 'start').length >= 2 || undefined, 45_000, 100);
  assert.ok(!pidAlive(hung.pid), `the unhealthy command is dead${context()}`);
  const hungBaton = batons.find((b) => b.stderr.includes(`as ${hung.identity} `))!;
  assert.match(hungBaton.stderr, /is hung: the health command failed 2 times in a row \(exit 1\); stopping sh/);
  const starts = entries().filter((e) => e.what === 'start');
  assert.notEqual(starts[0]!.identity, hung.identity, `the next slot ran on the other instance${context()}`);
  for (const e of starts) assert.ok(e.term > hung.term, `slot ${e.slot} ran in the unhealthy term${context()}`);
  const s = new SqliteStore(storePath);
  const h = (await readCronHead(s.ledger, lock).finally(() => s.close()))!;
  const record = h.slots.find((x) => x.slot === hung.slot)!;
  assert.equal(record.status, 'cut');
  assert.match(record.reason ?? '', /^hung: the health command failed 2 times in a row \(exit 1\)$/);
  const ran = entries().map((e) => e.slot);
  assert.equal(new Set(ran).size, ran.length, 'a slot ran twice');
  for (const b of batons) b.signal('SIGTERM');
  for (const b of batons) assert.equal((await b.waitForExit(15_000)).code, 0, b.stderr);
});
