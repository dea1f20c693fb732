/**
 * baton-election/node-cron with the real node-cron 4 in three processes (test/node-cron/
 * fleet-member.mjs), a task firing every second, on SQLite and on PostgreSQL: the leader is
 * killed with SIGKILL mid-stream. Checked from the fire log and baton's cron ledger: no fire ran
 * twice; every fire that ran was claimed in the ledger by the process that ran it, under its
 * term; every second from the first fire to the last ran once, or is accounted for (claimed by
 * the killed leader and recorded `cut`, or missed by node-cron itself in an overloaded process).
 * With `catch-up`, a fire due while the leader was dead runs late on the new leader; with
 * `skip`, such fires run nowhere.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { openStore } from '../../src/stores/registry.js';
import { readCronHead, type SlotRecord } from '../../src/jobs/cron-ledger.js';
import { PostgresServer } from '../../infra/servers/postgres.js';
import { ROOT, TempDir, cleanEnv, waitFor } from '../harness/cli.js';

const dir = new TempDir();
const members: ChildProcess[] = [];
const servers: PostgresServer[] = [];
after(async () => {
  for (const m of members) if (m.exitCode === null && m.signalCode === null) m.kill('SIGKILL');
  await Promise.all(servers.map((s) => s.stop()));
  dir.remove();
});

interface Fire {
  ev: 'ran' | 'missed';
  slot: string;
  pid: number;
  at: number;
  term?: number | null;
}

function startMember(store: string, missed: string, fireLog: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(ROOT, 'test', 'node-cron', 'fleet-member.mjs')], {
    cwd: dir.path,
    env: cleanEnv(dir.path, { BATON_DIST: join(ROOT, 'dist'), STORE: store, MISSED: missed, FIRE_LOG: fireLog }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  members.push(child);
  let err = '';
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  return new Promise((resolve, reject) => {
    child.stdout!.once('data', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`member exited ${code} before it was ready: ${err}`)));
  });
}

function fires(fireLog: string): Fire[] {
  if (!existsSync(fireLog)) return [];
  return readFileSync(fireLog, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Fire);
}

async function scenario(store: string, missed: 'catch-up' | 'skip', name: string): Promise<void> {
  const fireLog = dir.join(`${name}.log`);
  const fleet = await Promise.all([0, 1, 2].map(() => startMember(store, missed, fireLog)));
  const ran = () => fires(fireLog).filter((f) => f.ev === 'ran');
  await waitFor('three fires', () => ran().length >= 3, 30_000, 50);
  // The leader is whoever ran the newest fire; kill it without a chance to release.
  const leaderPid = ran().at(-1)!.pid;
  const leader = fleet.find((m) => m.pid === leaderPid)!;
  const killedAt = Date.now();
  leader.kill('SIGKILL');
  await new Promise((r) => leader.once('exit', r));
  await waitFor('four fires after the takeover', () => ran().filter((f) => f.pid !== leaderPid && Date.parse(f.slot) > killedAt).length >= 4, 30_000, 50);
  const survivors = fleet.filter((m) => m !== leader);
  for (const m of survivors) m.kill('SIGTERM');
  await Promise.all(survivors.map((m) => new Promise((r) => (m.exitCode !== null ? r(null) : m.once('exit', r)))));
  assert.deepEqual(survivors.map((m) => m.exitCode), [0, 0], 'survivors shut down cleanly');

  const all = fires(fireLog);
  const runs = all.filter((f) => f.ev === 'ran');
  const missedHere = new Set(all.filter((f) => f.ev === 'missed').map((f) => f.slot));
  const s = await openStore(store);
  const head = await readCronHead(s.ledger!, 'node-cron/tick');
  await s.close();
  assert.ok(head, 'the ledger entry exists');
  const claimed = new Map<string, SlotRecord>(head.slots.map((r) => [r.slot, r]));

  // Never twice.
  const bySlot = new Map<string, Fire[]>();
  for (const f of runs) bySlot.set(f.slot, [...(bySlot.get(f.slot) ?? []), f]);
  const twice = [...bySlot].filter(([, fs]) => fs.length > 1);
  assert.deepEqual(twice, [], 'no fire ran twice');
  // Every fire that ran was claimed by the process that ran it, under the term it was told.
  for (const f of runs) {
    const rec = claimed.get(f.slot);
    assert.ok(rec, `fire ${f.slot} ran without a claim in the ledger`);
    assert.equal(rec.pid, f.pid, `fire ${f.slot}: claimed by pid ${rec.pid}, ran in ${f.pid}`);
    assert.equal(rec.term, f.term);
    if (f.pid !== leaderPid) assert.equal(rec.status, 'done', `fire ${f.slot}: ${rec.status}`);
  }
  // A claim that did not run is the killed leader's, recorded cut by the next term's fence.
  for (const rec of head.slots) {
    if (bySlot.has(rec.slot)) continue;
    assert.equal(rec.pid, leaderPid, `slot ${rec.slot} claimed by live pid ${rec.pid} but never ran`);
    assert.equal(rec.status, 'cut');
  }
  const terms = runs.map((f) => f.term!);
  const after = runs.filter((f) => f.pid !== leaderPid && Date.parse(f.slot) > killedAt);
  assert.ok(Math.min(...after.map((f) => f.term!)) > Math.max(...runs.filter((f) => f.pid === leaderPid).map((f) => f.term!)), `terms grew after the kill: ${terms.join(' ')}`);

  // Each second from the first fire to the last: ran once, claimed and cut, missed by node-cron
  // in some process, or (skip) due while the leader was dead.
  const first = Date.parse(runs[0]!.slot);
  const last = Date.parse(runs.at(-1)!.slot);
  const takeover = Math.min(...after.map((f) => f.at));
  const late = after.filter((f) => f.at - Date.parse(f.slot) > 500);
  const lost: string[] = [];
  for (let t = first; t <= last; t += 1000) {
    const slot = new Date(t).toISOString();
    if (bySlot.has(slot) || claimed.has(slot) || missedHere.has(slot)) continue;
    lost.push(slot);
  }
  console.log(`# ${name}: ${runs.length} fires ran, leader pid ${leaderPid} killed; terms ${[...new Set(terms)].join(' → ')}; caught up late: ${late.length}; not run: ${lost.length}; node-cron missed: ${missedHere.size}`);
  if (missed === 'catch-up') {
    assert.deepEqual(lost, [], 'with catch-up every fire ran once');
    assert.ok(late.length >= 1, 'a fire due while the leader was dead ran late on the new leader');
  } else {
    assert.ok(lost.length >= 1, 'with skip, the fires due while the leader was dead ran nowhere');
    for (const slot of lost) assert.ok(Date.parse(slot) >= killedAt - 1000 && Date.parse(slot) <= takeover, `slot ${slot} lost outside the outage`);
  }
}

describe('node-cron distributed tasks through baton', () => {
  test('SQLite, catch-up: kill -9 of the leader; each fire once, the outage caught up', () => scenario(dir.sqlite('catch-up.db'), 'catch-up', 'sqlite-catch-up'));
  test('SQLite, skip: kill -9 of the leader; each fire at most once, the outage skipped', () => scenario(dir.sqlite('skip.db'), 'skip', 'sqlite-skip'));
  test('PostgreSQL, catch-up: kill -9 of the leader; each fire once', async () => {
    const pg = new PostgresServer();
    servers.push(pg);
    await pg.start();
    await scenario(pg.url, 'catch-up', 'postgres-catch-up');
  });
});
