/**
 * `baton serve` as real processes on a real SQLite store: /leader, /readyz, /healthz and
 * /metrics on three candidates before, during and after the leader is SIGKILLed; then a
 * graceful SIGTERM releases the lease and exits 0. And `serve -- COMMAND`: the command runs
 * only while its instance leads, with the term /leader reports, and stops on shutdown.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { SqliteStore } from '../../src/stores/sqlite/index.js';
import { BatonProcess, TempDir, childCommand, cleanEnv, pidAlive, readChildLog, waitFor } from '../harness/cli.js';
import { SERVE_TIMING, getJson, logLines, metric, scrape, startServe, type ServeProcess } from './serve-harness.js';

const dir = new TempDir();
const started: BatonProcess[] = [];
after(async () => {
  await Promise.all(started.map((b) => b.kill()));
  dir.remove();
});

test('three serve processes: endpoints and metrics before, during and after a SIGKILL failover', async () => {
  const env = cleanEnv(dir.path);
  const args = ['--store', dir.sqlite('failover.db'), '--lock', 'svc', ...SERVE_TIMING];
  const a = await startServe(args, env, started);
  const first = await waitFor('a to lead', async () => {
    const r = await getJson(`${a.url}/leader`);
    return r.body.isSelf && r.body;
  });
  assert.equal(first.holder, a.identity);
  assert.equal(first.lock, 'svc');
  assert.ok(first.term >= 1);
  assert.ok(first.expiresInMs > 0 && first.expiresInMs <= 2000, `expiresInMs ${first.expiresInMs}`);
  assert.ok(!Number.isNaN(Date.parse(first.since)), 'since is a time');
  assert.equal(first.hostname, (await import('node:os')).hostname());

  const b = await startServe(args, env, started);
  const c = await startServe(args, env, started);
  for (const s of [b, c]) {
    await waitFor('standby ready', async () => (await getJson(`${s.url}/readyz`)).status === 200);
    const v = (await getJson(`${s.url}/leader`)).body;
    assert.equal(v.holder, a.identity, 'standbys name the leader');
    assert.equal(v.isSelf, false);
    assert.equal(v.term, first.term);
  }

  // Metrics before: one leader, everyone agrees on the term, standbys saw no change yet.
  const before = new Map<ServeProcess, Awaited<ReturnType<typeof scrape>>>();
  for (const s of [a, b, c]) before.set(s, await scrape(s.url));
  assert.equal(metric(before.get(a)!, 'baton_is_leader', { lock: 'svc' }), 1);
  assert.equal(metric(before.get(b)!, 'baton_is_leader', { lock: 'svc' }), 0);
  assert.equal(metric(before.get(c)!, 'baton_is_leader', { lock: 'svc' }), 0);
  // client-go's gauge, for the dashboards and alerts Kubernetes users already have.
  assert.equal(metric(before.get(a)!, 'leader_election_master_status', { name: 'svc' }), 1);
  assert.equal(metric(before.get(b)!, 'leader_election_master_status', { name: 'svc' }), 0);
  assert.equal(metric(before.get(c)!, 'leader_election_master_status', { name: 'svc' }), 0);
  for (const s of [a, b, c]) assert.equal(metric(before.get(s)!, 'baton_term', { lock: 'svc' }), first.term);
  assert.equal(metric(before.get(a)!, 'baton_leader_transitions_total', { lock: 'svc' }), 1, 'the leader saw its own election');
  assert.equal(metric(before.get(b)!, 'baton_leader_transitions_total', { lock: 'svc' }), 0, 'a standby does not count the leader it found');
  assert.ok(metric(before.get(a)!, 'baton_renew_duration_seconds_count', { lock: 'svc' })! >= 0);
  assert.ok(metric(before.get(a)!, 'baton_last_renew_age_seconds', { lock: 'svc' })! < 1.4);
  assert.equal(metric(before.get(b)!, 'baton_last_renew_age_seconds', { lock: 'svc' }), undefined, 'only the holder reports a renew age');
  assert.equal(metric(before.get(a)!, 'baton_store_errors_total', { lock: 'svc' }), 0);
  for (const s of [a, b, c]) assert.equal((await getJson(`${s.url}/healthz`)).status, 200);

  // A dies without releasing. During the lease's remaining life the standbys still name it.
  await waitFor('a to have renewed', async () => ((await scrape(a.url)).find((x) => x.name === 'baton_renew_duration_seconds_count')?.value ?? 0) >= 1, 5_000, 50);
  a.proc.signal('SIGKILL');
  await a.proc.exited;
  const during = (await getJson(`${b.url}/leader`)).body;
  assert.equal(during.holder, a.identity, 'right after the kill, b still sees a');
  assert.ok(during.expiresInMs <= 2000);

  const next = await waitFor(
    'a standby to take over',
    async () => {
      for (const s of [b, c]) {
        const v = (await getJson(`${s.url}/leader`)).body;
        if (v.isSelf) return { s, v };
      }
      return undefined;
    },
    15_000,
    50,
  );
  const other = next.s === b ? c : b;
  assert.ok(next.v.term > first.term, `term grew: ${first.term} -> ${next.v.term}`);
  assert.equal(next.v.holder, next.s.identity);
  const seen = await waitFor('the other standby to see the new leader', async () => {
    const v = (await getJson(`${other.url}/leader`)).body;
    return v.holder === next.s.identity && v;
  });
  assert.equal(seen.term, next.v.term);
  assert.equal(seen.isSelf, false);

  // Metrics after: is_leader flipped, the term grew, both survivors counted the failover.
  const winner = await scrape(next.s.url);
  const loser = await scrape(other.url);
  assert.equal(metric(winner, 'baton_is_leader', { lock: 'svc' }), 1);
  assert.equal(metric(loser, 'baton_is_leader', { lock: 'svc' }), 0);
  assert.equal(metric(winner, 'leader_election_master_status', { name: 'svc' }), 1);
  assert.equal(metric(loser, 'leader_election_master_status', { name: 'svc' }), 0);
  assert.equal(metric(winner, 'baton_term', { lock: 'svc' }), next.v.term);
  assert.equal(metric(loser, 'baton_term', { lock: 'svc' }), next.v.term);
  assert.equal(metric(winner, 'baton_leader_transitions_total', { lock: 'svc' }), 1);
  assert.equal(metric(loser, 'baton_leader_transitions_total', { lock: 'svc' }), 1);
  for (const s of [b, c]) assert.equal((await getJson(`${s.url}/healthz`)).status, 200);

  // The timeline records a failover from a to the winner.
  const state = (await getJson(`${other.url}/api/state`)).body;
  const failover = state.timeline.find((e: any) => e.kind === 'failover');
  assert.ok(failover, `a failover entry: ${JSON.stringify(state.timeline)}`);
  assert.equal(failover.previousHolder, a.identity);
  assert.equal(failover.holder, next.s.identity);
  assert.equal(failover.term, next.v.term);

  // Graceful shutdown: SIGTERM releases the lease and exits 0; the survivor takes over at once.
  next.s.proc.signal('SIGTERM');
  const res = await next.s.proc.waitForExit(10_000);
  assert.equal(res.code, 0, res.stderr);
  assert.ok(logLines(res.stderr).some((l) => l.event === 'stopped' && l.reason === 'stopped'));
  const third = await waitFor('the last one to lead', async () => {
    const v = (await getJson(`${other.url}/leader`)).body;
    return v.isSelf && v;
  }, 10_000, 50);
  assert.ok(third.term > next.v.term);
  other.proc.signal('SIGTERM');
  assert.equal((await other.proc.waitForExit(10_000)).code, 0);
  const store = new SqliteStore(dir.join('failover.db'));
  try {
    assert.equal((await store.read('svc'))?.holder, null, 'the last leader released the lease on SIGTERM');
  } finally {
    await store.close();
  }
});

test('serve -- COMMAND: runs the command while leading, stops it on SIGTERM, and the standby starts its own', async () => {
  const log = dir.join('child.log');
  const env = cleanEnv(dir.path, { CHILD_LOG: log });
  const args = ['--store', dir.sqlite('command.db'), '--lock', 'cmd', ...SERVE_TIMING, '--', ...childCommand()];
  const a = await startServe(args, env, started);
  const firstStart = await waitFor('a\'s command to start', () => readChildLog(log).find((l) => l.kind === 'start'), 10_000);
  const aView = (await getJson(`${a.url}/leader`)).body;
  assert.equal(aView.isSelf, true);
  assert.equal(firstStart.identity, a.identity);
  assert.equal(firstStart.term, aView.term, 'the command sees the fencing token /leader reports');
  const b = await startServe(args, env, started);
  await waitFor('b to see a', async () => (await getJson(`${b.url}/leader`)).body.holder === a.identity);
  assert.equal(readChildLog(log).filter((l) => l.kind === 'start').length, 1, 'the standby runs nothing');

  a.proc.signal('SIGTERM');
  const res = await a.proc.waitForExit(10_000);
  assert.equal(res.code, 0, res.stderr);
  const stop = readChildLog(log).find((l) => l.kind === 'stop' && l.pid === firstStart.pid);
  assert.ok(stop, 'a\'s command got SIGTERM before baton released the lease');
  assert.ok(!pidAlive(firstStart.pid));
  const second = await waitFor('b\'s command to start', () => readChildLog(log).find((l) => l.kind === 'start' && l.identity === b.identity), 10_000, 50);
  assert.ok(second.term > firstStart.term);
  assert.ok(second.monoNs > stop.monoNs, 'no overlap: b\'s command started after a\'s stopped');
  b.proc.signal('SIGTERM');
  assert.equal((await b.proc.waitForExit(10_000)).code, 0);
});
