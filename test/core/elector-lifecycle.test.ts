/**
 * The elector's lifecycle on the fake clock and the memory store: release on stop, resign,
 * terms that grow on every change of holder, `stopped` (with a reason, after the signal is
 * aborted) after every `elected`, and records that name this identity under another term.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LeaderElector, type ElectedEvent, type StopReason } from '../../src/core/elector.js';
import { LeaseLostError } from '../../src/core/errors.js';
import type { LeaseStore } from '../../src/core/store.js';
import { MemoryStore } from '../../src/stores/memory/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';

const TIMING = { leaseDurationMs: 1000, renewDeadlineMs: 700, retryPeriodMs: 200, jitterFactor: 1.2 };
const LOCK = 'life';

type Ev = { atMs: number; who: string; event: 'elected' | 'stopped'; term: number; reason?: StopReason; abortedFirst?: boolean };

/** World: one fake clock, one memory backend, and every event of every candidate in order. */
class World {
  readonly clock = new FakeClock();
  readonly store = new MemoryStore();
  readonly log: Ev[] = [];
  private readonly electors: LeaderElector[] = [];

  candidate(identity: string, options: { releaseOnStop?: boolean; store?: LeaseStore } = {}): LeaderElector {
    const store = options.store ?? new MemoryStore(this.store.backend);
    const e = new LeaderElector({ store, lock: LOCK, identity, clock: this.clock, releaseOnStop: options.releaseOnStop, ...TIMING });
    let signal: AbortSignal | undefined;
    e.on('elected', (ev: ElectedEvent) => {
      signal = ev.signal;
      this.log.push({ atMs: this.clock.monotonicMs(), who: identity, event: 'elected', term: ev.term });
    });
    e.on('stopped', (ev) => {
      this.log.push({ atMs: this.clock.monotonicMs(), who: identity, event: 'stopped', term: ev.term, reason: ev.reason, abortedFirst: signal?.aborted });
    });
    this.electors.push(e);
    return e.start();
  }

  elected(who?: string): Ev[] {
    return this.log.filter((l) => l.event === 'elected' && (!who || l.who === who));
  }

  stopped(who: string): Ev[] {
    return this.log.filter((l) => l.event === 'stopped' && l.who === who);
  }

  /** assertLifecycle: per candidate, elected/stopped alternate with matching terms; stopped has a reason and comes after the abort; at most one leader at a time. */
  assertLifecycle(): void {
    const leading = new Map<string, number>();
    for (const l of this.log) {
      if (l.event === 'elected') {
        assert.equal(leading.size, 0, `${l.who} elected at ${l.atMs}ms while ${[...leading.keys()]} led`);
        leading.set(l.who, l.term);
      } else {
        assert.equal(leading.get(l.who), l.term, `${l.who} stopped term ${l.term} without leading it`);
        assert.ok(l.reason, 'stopped has a reason');
        assert.equal(l.abortedFirst, true, 'the signal is aborted before stopped is emitted');
        leading.delete(l.who);
      }
    }
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.electors.map((e) => e.stop()));
    this.assertLifecycle();
    assert.equal(this.log.filter((l) => l.event === 'elected').length, this.log.filter((l) => l.event === 'stopped').length, 'every elected has its stopped');
  }
}

describe('release on stop', () => {
  test('stop() releases: the standby takes over at the same instant, without waiting for expiry', async () => {
    const w = new World();
    const a = w.candidate('a');
    await w.clock.advance(0);
    const b = w.candidate('b');
    await w.clock.advance(500);
    await a.stop();
    await w.clock.advance(0);
    assert.deepEqual(w.stopped('a').map((l) => [l.atMs, l.reason]), [[500, 'stopped']]);
    assert.deepEqual(w.elected('b').map((l) => [l.atMs, l.term]), [[500, 2]]);
    assert.equal(b.isLeader(), true);
    const record = await w.store.read(LOCK);
    assert.equal(record?.holder, 'b');
    assert.equal(record?.transitions, 2);
    await w.stopAll();
    assert.equal((await w.store.read(LOCK))?.holder, null, 'the last leader released too');
  });

  test('releaseOnStop: false leaves the lease to expire: the standby waits out the full lease', async () => {
    const w = new World();
    const a = w.candidate('a', { releaseOnStop: false });
    await w.clock.advance(0);
    w.candidate('b');
    await w.clock.advance(500);
    const lastRenewal = a.leadershipWindow()!.renewStartMs;
    await a.stop();
    await w.clock.advance(3000);
    assert.equal(w.elected('b')[0]?.atMs, lastRenewal + TIMING.leaseDurationMs);
    await w.stopAll();
  });

  test('resign() ends leadership (resigned), releases at once, and keeps campaigning', async () => {
    const w = new World();
    const a = w.candidate('a');
    const holders: (string | null)[] = [];
    w.store.watch(LOCK, (r) => holders.push(r?.holder ?? null));
    await w.clock.advance(300);
    await a.resign();
    assert.deepEqual(w.stopped('a').map((l) => [l.atMs, l.reason]), [[300, 'resigned']]);
    await w.clock.advance(TIMING.retryPeriodMs * (1 + TIMING.jitterFactor));
    assert.ok(holders.includes(null), 'the lease was released');
    assert.deepEqual(w.elected('a').map((l) => l.term), [1, 2], 'a campaigned again after resigning');
    await w.stopAll();
  });

  test('after resign(), a standby wins the lease', async () => {
    const w = new World();
    const a = w.candidate('a');
    await w.clock.advance(0);
    const b = w.candidate('b');
    await w.clock.advance(300);
    await a.resign();
    await w.clock.advance(TIMING.retryPeriodMs * 3);
    try {
      assert.deepEqual(w.elected().map((l) => [l.who, l.term]), [['a', 1], ['b', 2]]);
      assert.equal(b.isLeader(), true);
    } finally {
      await w.stopAll();
    }
  });
});

describe('terms', () => {
  test('the term grows on every change of holder, whatever the path, and is never reused', async () => {
    const w = new World();
    const a = w.candidate('a', { releaseOnStop: false });
    await w.clock.advance(0);
    const b = w.candidate('b');
    const c = w.candidate('c');
    await w.clock.advance(300);
    await a.stop(); // crash-like: no release, b or c waits out the lease
    await w.clock.advance(TIMING.leaseDurationMs + 100);
    const second = w.elected()[1]!;
    const [next, last] = second.who === 'b' ? [b, c] : [c, b];
    await next.resign(); // release path
    await w.clock.advance(10);
    await last.stop(); // release on stop
    await w.clock.advance(TIMING.retryPeriodMs * 3);
    w.store.backend.delete(LOCK); // the record vanishes (as with server-side expiry); the counter stays
    await w.clock.advance(TIMING.leaseDurationMs * 2);
    const terms = w.elected().map((l) => l.term);
    assert.ok(terms.length >= 4, `elections: ${JSON.stringify(w.elected())}`);
    for (let i = 1; i < terms.length; i++) assert.ok(terms[i]! > terms[i - 1]!, `terms ${terms}`);
    assert.equal((await w.store.read(LOCK))?.term, terms.at(-1));
    await w.stopAll();
  });
});

describe('stopped follows elected, with a reason', () => {
  test('lost: another holder overwrote the record', async () => {
    const w = new World();
    const a = w.candidate('a');
    await w.clock.advance(300);
    const record = (await w.store.read(LOCK))!;
    const now = w.clock.wallMs();
    const taken = await w.store.write(LOCK, record.revision, { holder: 'intruder', newTerm: true, leaseDurationMs: 60_000, acquiredAt: now, renewedAt: now, transitions: 2, stepDownRequested: false, metadata: {} });
    assert.ok(taken.ok);
    await w.clock.advance(0);
    assert.deepEqual(w.stopped('a').map((l) => [l.atMs, l.reason]), [[300, 'lost']]);
    assert.equal(a.isLeader(), false);
    await w.stopAll();
    assert.equal((await w.store.read(LOCK))?.holder, 'intruder', 'a never released a lease it no longer held');
  });

  test('a record with this identity but another term is not ours: lost, and never released by us', async () => {
    const w = new World();
    const a = w.candidate('a');
    await w.clock.advance(300);
    const record = (await w.store.read(LOCK))!;
    const now = w.clock.wallMs();
    // Another process configured with the same identity acquired (a new term).
    const twin = await w.store.write(LOCK, record.revision, { holder: 'a', newTerm: true, leaseDurationMs: 60_000, acquiredAt: now, renewedAt: now, transitions: 2, stepDownRequested: false, metadata: { pid: 2 } });
    assert.ok(twin.ok && twin.record.term === 2);
    await w.clock.advance(0);
    assert.deepEqual(w.stopped('a').map((l) => [l.term, l.reason]), [[1, 'lost']]);
    assert.equal(a.isLeader(), false);
    await w.clock.advance(2000);
    assert.equal(w.elected('a').length, 1, 'the twin\'s live lease (60 s) is not taken over');
    await w.stopAll();
    const after = await w.store.read(LOCK);
    assert.equal(after?.holder, 'a');
    assert.equal(after?.term, 2);
    assert.equal(after?.revision, twin.record.revision, 'stop() did not release the twin\'s term');
  });

  test('a restarted candidate finding its own identity in the record waits out the lease and takes a new term', async () => {
    const w = new World();
    const old = w.candidate('same', { releaseOnStop: false });
    await w.clock.advance(400);
    const lastRenewal = old.leadershipWindow()!.renewStartMs;
    await old.stop(); // the old process dies holding term 1
    const fresh = w.candidate('same');
    await w.clock.advance(TIMING.leaseDurationMs * 2);
    const elected = w.elected('same');
    assert.deepEqual(elected.map((l) => l.term), [1, 2]);
    assert.ok(elected[1]!.atMs >= lastRenewal + TIMING.leaseDurationMs, `re-elected at ${elected[1]!.atMs}ms, before the old lease ran out`);
    assert.equal(fresh.term, 2);
    await w.stopAll();
  });

  test('elected() resolves with the term and a signal that aborts with LeaseLostError when leadership ends', async () => {
    const w = new World();
    const a = w.candidate('a');
    const won = a.elected();
    await w.clock.advance(0);
    const { term, signal } = await won;
    assert.equal(term, 1);
    assert.equal(a.term, 1);
    const again = await a.elected();
    assert.deepEqual({ ...again, heartbeat: undefined }, { term: 1, signal, deadlineMs: a.leadershipWindow()!.deadlineMs, heartbeat: undefined }, 'already leading: resolves at once');
    assert.equal(typeof again.heartbeat, 'function', 'with the way to report progress (progressTimeoutMs)');
    const aborted = new AbortController();
    const never = w.candidate('b').elected({ signal: aborted.signal });
    aborted.abort(new Error('gave up'));
    await assert.rejects(never, /gave up/);
    await w.stopAll();
    assert.ok(signal.aborted);
    assert.ok(signal.reason instanceof LeaseLostError);
    assert.match(signal.reason.message, /"life".*\(stopped\)/);
  });

  test('standbys hear who leads through `leader` events', async () => {
    const w = new World();
    w.candidate('a');
    await w.clock.advance(0);
    const b = w.candidate('b');
    const seen: [string | null, number, boolean][] = [];
    b.on('leader', (e) => seen.push([e.holder, e.term, e.isSelf]));
    await w.clock.advance(100);
    assert.deepEqual(b.leader() && [b.leader()!.holder, b.leader()!.term], ['a', 1]);
    await w.stopAll();
    assert.deepEqual(seen[0], ['a', 1, false]);
  });
});
