/**
 * Fault tests for the Redis store with real electors on short leases (lease 2 s, renew deadline
 * 1.4 s, retry 200 ms) against a real redis-server: killed (SIGKILL) and restarted, frozen
 * (SIGSTOP) for longer than the lease, and a leader's connection killed by `CLIENT KILL` while
 * a renewal is held up by `CLIENT PAUSE`. Throughout, leaderships must never overlap, terms
 * must only grow, and no exception may escape (uncaughtException / unhandledRejection).
 * Bounds are generous: these prove behaviour, the benchmarks measure it.
 */
import { after, afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { LeaderElector, type StopReason } from '../../src/core/elector.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { RedisServer } from '../harness/servers.js';

const TIMING = { leaseDurationMs: 2_000, renewDeadlineMs: 1_400, retryPeriodMs: 200 };
/** Timer and event-loop slack allowed on top of the renew deadline. */
const SLACK_MS = 600;

const server = await new RedisServer().start();
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
  at: number;
  who: string;
  kind: 'elected' | 'stopped';
  term: number;
  reason?: StopReason;
}

/** A group of candidates, each on its own store handle (its own connections), for one lock. */
class Candidates {
  readonly electors: LeaderElector[] = [];
  readonly stores: RedisStore[] = [];
  readonly log: Transition[] = [];
  readonly lastRenewal = new Map<string, number>();
  storeErrors = 0;

  constructor(readonly lock: string, count: number) {
    for (let i = 0; i < count; i++) {
      const who = `${lock}-c${i}`;
      const store = new RedisStore({ url: server.url });
      const e = new LeaderElector({ store, lock, identity: who, ...TIMING });
      e.on('elected', (ev) => {
        this.lastRenewal.set(who, performance.now());
        this.log.push({ at: performance.now(), who, kind: 'elected', term: ev.term });
      });
      e.on('renewed', () => this.lastRenewal.set(who, performance.now()));
      e.on('stopped', (ev) => this.log.push({ at: performance.now(), who, kind: 'stopped', term: ev.term, reason: ev.reason }));
      e.on('storeError', () => this.storeErrors++);
      this.stores.push(store);
      this.electors.push(e);
    }
    this.electors.forEach((e) => e.start());
  }

  /** leader waits until one candidate leads, and returns it. */
  async leader(ms: number): Promise<LeaderElector> {
    return until('a leader', () => this.electors.find((e) => e.isLeader()), ms);
  }

  /** The transition log must alternate elected/stopped with strictly growing terms. */
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
        assert.equal(t.who, current?.who, `${t.who} stopped but ${current?.who} was leading`);
        current = undefined;
      }
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.electors.map((e) => e.stop()));
    await Promise.all(this.stores.map((s) => s.close()));
  }
}

let group: Candidates | undefined;
/** Set while a test has the server killed, so a failed test still leaves it running. */
let serverDown = false;
let n = 0;
beforeEach(() => {
  escaped.length = 0;
});
afterEach(async () => {
  if (serverDown) await server.start();
  serverDown = false;
  await group?.stop();
  group = undefined;
});

describe('redis faults', () => {
  it('server killed while a leader holds: it steps down by its deadline; after a restart a leader is elected again', async () => {
    group = new Candidates(`kill-${process.pid}-${n++}`, 2);
    const leader = await group.leader(10_000);
    const { term, signal } = await leader.elected();
    await sleep(700); // a few renewals
    const stopped = once(leader, 'stopped');
    serverDown = true;
    await server.kill();
    const ev = await withTimeout(stopped, TIMING.renewDeadlineMs + 3_000, 'the leader to step down');
    const stoppedAt = performance.now();
    const sinceRenewal = stoppedAt - group.lastRenewal.get(leader.identity)!;
    assert.equal(ev.reason, 'renew-deadline');
    assert.ok(signal.aborted, 'the leadership signal is aborted');
    assert.ok(sinceRenewal <= TIMING.renewDeadlineMs + SLACK_MS, `stepped down ${sinceRenewal.toFixed(0)}ms after its last renewal`);
    assert.ok(!group.electors.some((e) => e.isLeader()), 'nobody leads while the server is down');

    await sleep(500);
    await server.start();
    serverDown = false;
    const restartedAt = performance.now();
    const next = await group.leader(15_000);
    const again = await next.elected();
    assert.ok(again.term > term, `term ${again.term} after ${term}: the counter survived the restart`);
    report(`kill: stepped down ${sinceRenewal.toFixed(0)} ms after the last renewal; leader again ${(performance.now() - restartedAt).toFixed(0)} ms after the restart`);
    group.assertNoOverlap();
    assert.deepEqual(escaped, []);
  });

  it('server frozen (SIGSTOP) longer than the lease: the leader steps down by its deadline; after SIGCONT a leader is elected again', async () => {
    group = new Candidates(`stop-${process.pid}-${n++}`, 2);
    const leader = await group.leader(10_000);
    const { term, signal } = await leader.elected();
    await sleep(700);
    const stopped = once(leader, 'stopped');
    server.pause();
    try {
      const ev = await withTimeout(stopped, TIMING.renewDeadlineMs + 3_000, 'the leader to step down');
      const sinceRenewal = performance.now() - group.lastRenewal.get(leader.identity)!;
      assert.equal(ev.reason, 'renew-deadline');
      assert.ok(signal.aborted);
      assert.ok(sinceRenewal <= TIMING.renewDeadlineMs + SLACK_MS, `stepped down ${sinceRenewal.toFixed(0)}ms after its last renewal`);
      report(`SIGSTOP: stepped down ${sinceRenewal.toFixed(0)} ms after the last renewal`);
      await sleep(TIMING.leaseDurationMs + 1_000 - TIMING.renewDeadlineMs); // frozen for longer than the lease
      assert.ok(!group.electors.some((e) => e.isLeader()), 'nobody leads while the server is frozen');
    } finally {
      server.resume();
    }
    const resumedAt = performance.now();
    const next = await group.leader(15_000);
    const again = await next.elected();
    assert.ok(again.term > term, `term ${again.term} after ${term}`);
    report(`SIGSTOP: leader again ${(performance.now() - resumedAt).toFixed(0)} ms after SIGCONT`);
    group.assertNoOverlap();
    assert.deepEqual(escaped, []);
  });

  it('connections killed (CLIENT KILL) while renewals are held up: nothing escapes, the elector recovers or steps down', async () => {
    group = new Candidates(`clientkill-${process.pid}-${n++}`, 2);
    const admin = new Redis({ host: '127.0.0.1', port: server.port });
    admin.on('error', () => {});
    try {
      await group.leader(10_000);
      await sleep(500);
      const errorsBefore = group.storeErrors;
      for (let round = 0; round < 4; round++) {
        // Hold every write (scripts included) so a renewal is in flight, then kill it mid-way.
        await admin.call('CLIENT', 'PAUSE', '1000', 'WRITE');
        await sleep(TIMING.retryPeriodMs + 150);
        const killed = Number(await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes'));
        assert.ok(killed >= 2, `killed ${killed} connections`);
        await admin.call('CLIENT', 'UNPAUSE');
        await sleep(400);
      }
      assert.ok(group.storeErrors > errorsBefore, 'the killed renewals were reported as store errors');
      const steppedDown = group.log.filter((t) => t.kind === 'stopped').length;
      report(`CLIENT KILL: ${group.storeErrors - errorsBefore} store errors reported, ${steppedDown} step-downs over 4 kills`);
      const leader = await group.leader(10_000);
      // The leader renews again on fresh connections.
      const renewedAt = group.lastRenewal.get(leader.identity)!;
      await until('a renewal after the kills', () => group!.lastRenewal.get(leader.identity)! > renewedAt, 3_000);
      group.assertNoOverlap();
      for (const t of group.log) if (t.kind === 'stopped') assert.ok(['renew-deadline', 'lost'].includes(t.reason!), `stopped: ${t.reason}`);
      assert.deepEqual(escaped, []);
    } finally {
      admin.disconnect();
    }
  });
});

/** report prints a measured figure as a TAP comment. */
const report = (line: string) => process.stdout.write(`# redis faults: ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function once(e: LeaderElector, event: 'stopped'): Promise<{ term: number; reason: StopReason }> {
  return new Promise((resolve) => e.once(event, (ev) => resolve(ev)));
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
