/**
 * Fault tests for the PostgreSQL store with real electors on short leases (lease 2 s, renew
 * deadline 1.4 s, retry 200 ms) against a real PostgreSQL 15: the server killed (SIGKILL) and
 * restarted; the whole server frozen (SIGSTOP on the postmaster and every backend) for longer
 * than the lease; and the candidates' connections cut by pg_terminate_backend while a renewal
 * is held up by an admin's row lock. Leaderships must never overlap, terms must only grow, and
 * no exception may escape (uncaughtException / unhandledRejection). Bounds are generous: these
 * tests prove behaviour; measuring it is for benchmarks.
 */
import { after, afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { LeaderElector, type StopReason } from '../../src/core/elector.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { PostgresServer } from '../harness/servers.js';

const TIMING = { leaseDurationMs: 2_000, renewDeadlineMs: 1_400, retryPeriodMs: 200 };
/** Timer and event-loop slack on top of the renew deadline. */
const SLACK_MS = 600;

const server = await new PostgresServer().start();
after(() => server.stop());

const escaped: unknown[] = [];
const onEscape = (err: unknown) => escaped.push(err);
process.on('uncaughtException', onEscape);
process.on('unhandledRejection', onEscape);
after(() => {
  process.off('uncaughtException', onEscape);
  process.off('unhandledRejection', onEscape);
});

interface Transition {
  who: string;
  kind: 'elected' | 'stopped';
  term: number;
  reason?: StopReason;
}

/** Candidates for one lock, each with its own store (pool and LISTEN session), tagged by application_name. */
class Candidates {
  readonly electors: LeaderElector[] = [];
  readonly stores: PostgresStore[] = [];
  readonly log: Transition[] = [];
  readonly lastRenewal = new Map<string, number>();
  storeErrors = 0;

  constructor(readonly lock: string, count: number) {
    for (let i = 0; i < count; i++) {
      const who = `${lock}-c${i}`;
      const store = new PostgresStore({ connectionString: `${server.url}?application_name=${lock}&heartbeat=500ms` });
      const e = new LeaderElector({ store, lock, identity: who, ...TIMING });
      e.on('elected', (ev) => {
        this.lastRenewal.set(who, performance.now());
        this.log.push({ who, kind: 'elected', term: ev.term });
      });
      e.on('renewed', () => this.lastRenewal.set(who, performance.now()));
      e.on('stopped', (ev) => this.log.push({ who, kind: 'stopped', term: ev.term, reason: ev.reason }));
      e.on('storeError', () => this.storeErrors++);
      this.stores.push(store);
      this.electors.push(e);
    }
    this.electors.forEach((e) => e.start());
  }

  leader(ms: number): Promise<LeaderElector> {
    return until('a leader', () => this.electors.find((e) => e.isLeader()), ms);
  }

  /** elected/stopped alternate, each stop by the one who was elected, terms strictly growing. */
  assertNoOverlap(): void {
    let current: Transition | undefined;
    let lastTerm = 0;
    for (const t of this.log) {
      if (t.kind === 'elected') {
        assert.equal(current, undefined, `${t.who} elected (term ${t.term}) while ${current?.who} led (term ${current?.term})`);
        assert.ok(t.term > lastTerm, `term ${t.term} after ${lastTerm}`);
        lastTerm = t.term;
        current = t;
      } else {
        assert.equal(t.who, current?.who, `${t.who} stopped while ${current?.who} led`);
        current = undefined;
      }
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.electors.map((e) => e.stop()));
    await Promise.all(this.stores.map((s) => s.close()));
  }
}

/**
 * freeze stops the whole server. The harness's pause() stops only the postmaster, whose
 * backends keep serving connections already open; a frozen machine stops them all.
 */
function freeze(): number[] {
  const postmaster = server.pid!;
  process.kill(postmaster, 'SIGSTOP'); // first, so no new backend is forked meanwhile
  const children = readFileSync(`/proc/${postmaster}/task/${postmaster}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  for (const pid of children) process.kill(pid, 'SIGSTOP');
  return [postmaster, ...children];
}
function thaw(pids: number[]): void {
  for (const pid of [...pids].reverse()) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // exited meanwhile
    }
  }
}

let group: Candidates | undefined;
let serverDown = false;
let frozen: number[] = [];
let n = 0;
beforeEach(() => {
  escaped.length = 0;
});
afterEach(async () => {
  thaw(frozen);
  frozen = [];
  if (serverDown) await server.start();
  serverDown = false;
  await group?.stop();
  group = undefined;
});

describe('postgres faults', () => {
  it('server killed while a leader holds: it steps down by its deadline; after a restart a leader is elected again', async () => {
    group = new Candidates(`pgkill_${process.pid}_${n++}`, 2);
    const leader = await group.leader(10_000);
    const { term, signal } = await leader.elected();
    await sleep(700); // a few renewals
    const stopped = nextStop(leader);
    serverDown = true;
    await server.kill();
    const ev = await withTimeout(stopped, TIMING.renewDeadlineMs + 3_000, 'the leader to step down');
    const sinceRenewal = performance.now() - group.lastRenewal.get(leader.identity)!;
    assert.equal(ev.reason, 'renew-deadline');
    assert.ok(signal.aborted, 'the leadership signal is aborted');
    assert.ok(sinceRenewal <= TIMING.renewDeadlineMs + SLACK_MS, `stepped down ${sinceRenewal.toFixed(0)}ms after its last renewal`);
    assert.ok(!group.electors.some((e) => e.isLeader()), 'nobody leads while the server is down');

    await sleep(500);
    await server.start();
    serverDown = false;
    const restartedAt = performance.now();
    const next = await group.leader(20_000);
    const again = await next.elected();
    assert.ok(again.term > term, `term ${again.term} after ${term}: the counter survived the restart`);
    report(`kill: stepped down ${sinceRenewal.toFixed(0)} ms after the last renewal; leader again ${(performance.now() - restartedAt).toFixed(0)} ms after the restart`);
    group.assertNoOverlap();
    assert.deepEqual(escaped, []);
  });

  it('whole server frozen (SIGSTOP) longer than the lease: the leader steps down by its deadline; after SIGCONT a leader is elected again', async () => {
    group = new Candidates(`pgstop_${process.pid}_${n++}`, 2);
    const leader = await group.leader(10_000);
    const { term, signal } = await leader.elected();
    await sleep(700);
    const stopped = nextStop(leader);
    frozen = freeze();
    const ev = await withTimeout(stopped, TIMING.renewDeadlineMs + 3_000, 'the leader to step down');
    const sinceRenewal = performance.now() - group.lastRenewal.get(leader.identity)!;
    assert.equal(ev.reason, 'renew-deadline');
    assert.ok(signal.aborted);
    assert.ok(sinceRenewal <= TIMING.renewDeadlineMs + SLACK_MS, `stepped down ${sinceRenewal.toFixed(0)}ms after its last renewal`);
    await sleep(TIMING.leaseDurationMs + 1_000 - TIMING.renewDeadlineMs); // frozen for longer than the lease
    assert.ok(!group.electors.some((e) => e.isLeader()), 'nobody leads while the server is frozen');
    thaw(frozen);
    frozen = [];
    const thawedAt = performance.now();
    const next = await group.leader(20_000);
    const again = await next.elected();
    assert.ok(again.term > term, `term ${again.term} after ${term}`);
    report(`SIGSTOP: stepped down ${sinceRenewal.toFixed(0)} ms after the last renewal; leader again ${(performance.now() - thawedAt).toFixed(0)} ms after SIGCONT`);
    group.assertNoOverlap();
    assert.deepEqual(escaped, []);
  });

  it('connections cut (pg_terminate_backend) while a renewal waits on a row lock: nothing escapes, the elector recovers or steps down', async () => {
    const lock = `pgterm_${process.pid}_${n++}`;
    group = new Candidates(lock, 2);
    const admin = new pg.Client({ connectionString: `${server.url}?application_name=baton_admin` });
    admin.on('error', () => {});
    await admin.connect();
    try {
      await group.leader(10_000);
      await sleep(500);
      const errorsBefore = group.storeErrors;
      for (let round = 0; round < 4; round++) {
        // Hold the lease row so the leader's next renewal is in flight, waiting, when its connection is cut.
        await admin.query('BEGIN');
        await admin.query('SELECT 1 FROM baton_leases WHERE lock = $1 FOR UPDATE', [lock]);
        await sleep(TIMING.retryPeriodMs + 150);
        const { rows } = await admin.query(
          `SELECT count(*) FILTER (WHERE wait_event_type = 'Lock')::int AS waiting, count(pg_terminate_backend(pid))::int AS cut
           FROM pg_stat_activity WHERE application_name = $1`,
          [lock],
        );
        assert.ok(rows[0].waiting >= 1, `a renewal was waiting on the row lock when cut (round ${round})`);
        assert.ok(rows[0].cut >= 2, `cut ${rows[0].cut} connections`);
        await admin.query('ROLLBACK');
        await sleep(400);
      }
      assert.ok(group.storeErrors > errorsBefore, 'the cut renewals were reported as store errors');
      const stepDowns = group.log.filter((t) => t.kind === 'stopped').length;
      report(`pg_terminate_backend: ${group.storeErrors - errorsBefore} store errors reported, ${stepDowns} step-downs over 4 cuts`);
      const leader = await group.leader(10_000);
      const renewedAt = group.lastRenewal.get(leader.identity)!;
      await until('a renewal on fresh connections', () => group!.lastRenewal.get(leader.identity)! > renewedAt, 3_000);
      await until('LISTEN sessions back', () => group!.stores.every((s) => s.listening), 5_000);
      group.assertNoOverlap();
      for (const t of group.log) if (t.kind === 'stopped') assert.ok(['renew-deadline', 'lost'].includes(t.reason!), `stopped: ${t.reason}`);
      assert.deepEqual(escaped, []);
    } finally {
      await admin.query('ROLLBACK').catch(() => {});
      await admin.end().catch(() => {});
    }
  });
});

const report = (line: string) => process.stdout.write(`# postgres faults: ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function nextStop(e: LeaderElector): Promise<{ term: number; reason: StopReason }> {
  return new Promise((resolve) => e.once('stopped', resolve));
}

async function until<T>(what: string, check: () => T | undefined | false, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms}ms waiting for ${what}`);
    await sleep(10);
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out after ${ms}ms waiting for ${what}`)), ms);
    p.then((v) => (clearTimeout(t), resolve(v)), (e) => (clearTimeout(t), reject(e)));
  });
}
