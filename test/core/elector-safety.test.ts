/**
 * The elector's safety rules on the fake clock, exactly: the leader steps down at
 * renewStart + renewDeadline when renewals fail or hang, before any standby could acquire;
 * retries are jittered within bounds; wall-clock jumps change nothing; and, over many
 * randomized schedules of failures, delays and restarts, no two candidates ever lead at once.
 *
 * The store is the real memory store behind ControlledStore, a wrapper (a fake, on purpose:
 * no real server can be told to fail or answer late one call at a time) that makes chosen calls
 * fail, hang, or arrive/answer late on the fake clock, and can deafen a candidate's notifications.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Clock } from '../../src/core/clock.js';
import { LeaderElector, type StopReason } from '../../src/core/elector.js';
import type { Timing } from '../../src/core/options.js';
import { LeaseLostError, StoreUnavailableError } from '../../src/core/errors.js';
import type { LeaseRecord, LeaseStore, LeaseWrite, StoreCapabilities, WatchListener, WriteResult } from '../../src/core/store.js';
import { MemoryStore } from '../../src/stores/memory/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';

/** What ControlledStore does with one call. */
type Action =
  | { kind: 'ok' }
  | { kind: 'fail' }
  | { kind: 'hang' }
  /** The request reaches the store `beforeMs` late; the answer comes back `afterMs` later. */
  | { kind: 'delay'; beforeMs: number; afterMs: number };

/** ControlledStore wraps a memory store; `policy` decides the fate of every call. */
class ControlledStore implements LeaseStore {
  readonly kind = 'controlled';
  readonly capabilities: StoreCapabilities;
  policy: (op: 'read' | 'write', next?: LeaseWrite) => Action = () => ({ kind: 'ok' });
  /** While false, change notifications are dropped (a partitioned candidate hears nothing). */
  hearing = true;
  readonly calls: { op: 'read' | 'write'; atMs: number; action: Action['kind']; next?: LeaseWrite }[] = [];
  private readonly hung = new Set<(err: Error) => void>();
  readonly watch?: (lock: string, listener: WatchListener) => () => void;
  /** LeaseStore.watchLive: see feedDown(). */
  watchLive = true;
  private readonly listeners = new Set<WatchListener>();

  constructor(readonly inner: MemoryStore, private readonly clock: Clock, options: { notify?: boolean } = {}) {
    const notify = options.notify ?? true;
    this.capabilities = { ...inner.capabilities };
    if (notify) {
      this.watch = (lock, listener) => {
        this.listeners.add(listener);
        const off = inner.watch(lock, (r) => this.hearing && listener(r));
        return () => {
          this.listeners.delete(listener);
          off();
        };
      };
    }
  }

  /** feedDown: the change feed drops, as a real store reports it (watchLive false, one wake-up). */
  feedDown(): void {
    this.hearing = false;
    this.watchLive = false;
    for (const listener of this.listeners) listener(undefined);
  }

  /** mode sets one fate for every call. */
  set mode(kind: 'ok' | 'fail' | 'hang') {
    this.policy = () => ({ kind });
  }

  read(lock: string): Promise<LeaseRecord | null> {
    return this.call('read', undefined, () => this.inner.read(lock));
  }

  write(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    return this.call('write', next, () => this.inner.write(lock, expected, next));
  }

  /** unhang fails every hung call, as a client library's timeout eventually would. */
  unhang(): void {
    for (const reject of [...this.hung]) reject(new StoreUnavailableError('controlled: hung call abandoned'));
    this.hung.clear();
  }

  async close(): Promise<void> {
    this.unhang();
  }

  private async call<T>(op: 'read' | 'write', next: LeaseWrite | undefined, fn: () => Promise<T>): Promise<T> {
    const action = this.policy(op, next);
    this.calls.push({ op, atMs: this.clock.monotonicMs(), action: action.kind, next });
    if (action.kind === 'fail') throw new StoreUnavailableError(`controlled: ${op} refused`);
    if (action.kind === 'hang') {
      return new Promise<T>((_, reject) => {
        const r = (err: Error) => (this.hung.delete(r), reject(err));
        this.hung.add(r);
      });
    }
    if (action.kind === 'delay') await this.sleep(action.beforeMs);
    const result = await fn();
    if (action.kind === 'delay') await this.sleep(action.afterMs);
    return result;
  }

  private sleep(ms: number): Promise<void> {
    return ms > 0 ? new Promise((r) => this.clock.setTimer(r, ms)) : Promise.resolve();
  }
}

const TIMING = { leaseDurationMs: 1000, renewDeadlineMs: 700, retryPeriodMs: 200, jitterFactor: 1.2 };
const LOCK = 'safety';

/** World: one fake clock, one memory backend, candidates each on their own ControlledStore. */
class World {
  readonly clock = new FakeClock();
  readonly backend = new MemoryStore();
  readonly log: { atMs: number; who: string; event: 'elected' | 'stopped'; term: number; reason?: StopReason }[] = [];

  candidate(identity: string, options: { clock?: Clock; notify?: boolean; random?: () => number } = {}) {
    const clock = options.clock ?? this.clock;
    const store = new ControlledStore(new MemoryStore(this.backend.backend), clock, { notify: options.notify });
    const elector = new LeaderElector({ store, lock: LOCK, identity, clock, random: options.random, ...TIMING });
    elector.on('elected', (e) => this.log.push({ atMs: this.clock.monotonicMs(), who: identity, event: 'elected', term: e.term }));
    elector.on('stopped', (e) => this.log.push({ atMs: this.clock.monotonicMs(), who: identity, event: 'stopped', term: e.term, reason: e.reason }));
    elector.on('storeError', () => {});
    return { elector, store, identity };
  }

  /** leaderAndStandby starts `a`, lets it be elected, then starts `b` as its standby. */
  async leaderAndStandby() {
    const a = this.candidate('a');
    const b = this.candidate('b');
    a.elector.start();
    await this.clock.advance(0);
    b.elector.start();
    return { a, b };
  }

  at(who: string, event: 'elected' | 'stopped', nth = 0) {
    return this.log.filter((l) => l.who === who && l.event === event)[nth];
  }

  /** stopAll stops electors while moving time on, so calls delayed on the fake clock can finish. */
  async stopAll(electors: LeaderElector[]): Promise<void> {
    let done = false;
    const all = Promise.all(electors.map((e) => e.stop())).then(() => (done = true));
    for (let i = 0; i < 1000 && !done; i++) await this.clock.advance(100);
    assert.ok(done, 'stop() did not finish');
    await all;
  }
}

describe('step-down at the deadline', () => {
  for (const failure of ['fail', 'hang'] as const) {
    test(`renewals that ${failure}: stopped exactly at renewStart + renewDeadline, before othersMayAcquire`, async () => {
      const w = new World();
      const a = w.candidate('a');
      a.elector.start();
      await w.clock.advance(450); // renewals at 200 and 400 succeed
      const win = a.elector.leadershipWindow()!;
      assert.equal(win.renewStartMs, 400);
      assert.equal(win.deadlineMs, 400 + TIMING.renewDeadlineMs);
      assert.equal(win.othersMayAcquireMs, 400 + TIMING.leaseDurationMs);
      const signal = a.elector.signal!;
      a.store.mode = failure;
      await w.clock.advance(win.deadlineMs - 1 - 450);
      assert.ok(a.elector.isLeader(), 'still leading 1 ms before the deadline');
      assert.equal(signal.aborted, false);
      assert.equal(w.at('a', 'stopped'), undefined);
      await w.clock.advance(1);
      assert.deepEqual(w.at('a', 'stopped'), { atMs: win.deadlineMs, who: 'a', event: 'stopped', term: 1, reason: 'renew-deadline' });
      assert.equal(a.elector.isLeader(), false);
      assert.equal(a.elector.term, undefined);
      assert.ok(signal.aborted && signal.reason instanceof LeaseLostError);
      const tried = a.store.calls.filter((c) => c.op === 'write' && c.atMs > 450);
      assert.ok(tried.length >= 1, 'it did try to renew');
      // Once the store answers again, the candidate campaigns again (and wins: nobody else runs).
      a.store.unhang();
      a.store.mode = 'ok';
      await w.clock.advance(TIMING.leaseDurationMs * 3);
      assert.equal(w.at('a', 'elected', 1)?.term, 2);
      await w.stopAll([a.elector]);
    });
  }

  test('a partitioned leader stops before a standby on the same clock is elected, at exactly the lease', async () => {
    const w = new World();
    const { a, b } = await w.leaderAndStandby();
    await w.clock.advance(650);
    const lastRenewal = a.elector.leadershipWindow()!.renewStartMs; // 600
    a.store.mode = 'fail';
    a.store.hearing = false;
    await w.clock.advance(3000);
    const stopped = w.at('a', 'stopped')!;
    const elected = w.at('b', 'elected')!;
    assert.equal(stopped.atMs, lastRenewal + TIMING.renewDeadlineMs);
    assert.equal(elected.atMs, lastRenewal + TIMING.leaseDurationMs, 'the standby counts the lease from when it saw the last renewal');
    assert.equal(elected.term, 2);
    await w.stopAll([a.elector, b.elector]);
  });

  test('a standby whose change feed is down polls every retry period, so a dead leader is replaced within lease + retry', async () => {
    const w = new World();
    const { a, b } = await w.leaderAndStandby();
    await w.clock.advance(5000);
    const readsLive = b.store.calls.filter((c) => c.op === 'read').length;
    assert.ok(readsLive <= 2, `a notified standby does not poll (${readsLive} reads in 5 s)`);
    b.store.feedDown();
    await w.clock.advance(5000);
    const readsDown = b.store.calls.filter((c) => c.op === 'read').length - readsLive;
    const maxGap = TIMING.retryPeriodMs * (1 + TIMING.jitterFactor);
    assert.ok(readsDown >= Math.floor(5000 / maxGap), `a standby whose feed is down polls (${readsDown} reads in 5 s)`);
    const lastRenewal = a.elector.leadershipWindow()!.renewStartMs;
    a.store.mode = 'hang'; // the leader's renewals never land: it steps down at its deadline
    await w.clock.advance(3000);
    const elected = w.at('b', 'elected')!;
    assert.ok(elected, 'b took over');
    assert.ok(w.at('a', 'stopped')!.atMs < elected.atMs, 'the old leader stopped first');
    assert.ok(elected.atMs <= lastRenewal + TIMING.leaseDurationMs + maxGap, `b elected ${elected.atMs - lastRenewal}ms after the last renewal (bound ${TIMING.leaseDurationMs + maxGap}ms)`);
    a.store.unhang();
    await w.stopAll([a.elector, b.elector]);
  });

  test('stop() returns even while the store hangs', async () => {
    const w = new World();
    const a = w.candidate('a');
    a.elector.start();
    await w.clock.advance(250);
    a.store.mode = 'hang';
    let returned = false;
    const stopping = a.elector.stop().then(() => (returned = true));
    await w.clock.advance(TIMING.leaseDurationMs * 5);
    const ok = returned;
    a.store.unhang();
    await stopping;
    assert.ok(ok, 'stop() was still waiting for the hung store after 5 lease durations');
  });
});

describe('jitter', () => {
  test('jittered() stays within [retryPeriod, retryPeriod × (1 + jitterFactor)]', () => {
    const w = new World();
    for (const r of [0, 1e-9, 0.25, 0.5, 0.999999]) {
      const e = w.candidate(`j${r}`, { random: () => r }).elector;
      assert.equal(e.jittered(), TIMING.retryPeriodMs * (1 + r * TIMING.jitterFactor));
    }
  });

  test('a polling standby waits between retryPeriod and retryPeriod × (1 + jitterFactor) between reads', async () => {
    const w = new World();
    let seed = 7;
    const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
    const a = w.candidate('a');
    const b = w.candidate('b', { notify: false, random });
    a.elector.start();
    await w.clock.advance(0);
    b.elector.start();
    await w.clock.advance(20_000);
    const reads = b.store.calls.filter((c) => c.op === 'read').map((c) => c.atMs);
    assert.ok(reads.length > 40, `only ${reads.length} reads`);
    const gaps = reads.slice(1).map((t, i) => t - reads[i]!);
    const max = TIMING.retryPeriodMs * (1 + TIMING.jitterFactor);
    for (const g of gaps) assert.ok(g >= TIMING.retryPeriodMs && g <= max, `gap ${g}ms outside [${TIMING.retryPeriodMs}, ${max}]`);
    assert.ok(Math.max(...gaps) - Math.min(...gaps) > TIMING.retryPeriodMs * 0.5, 'the gaps are actually jittered');
    assert.equal(w.log.filter((l) => l.who === 'b').length, 0, 'the standby never led');
    await w.stopAll([a.elector, b.elector]);
  });
});

/** clockWithWall shares the world's monotonic time and timers but keeps its own wall clock. */
function clockWithWall(base: FakeClock): Clock & { jumpWall(ms: number): void } {
  let offset = 0;
  return {
    monotonicMs: () => base.monotonicMs(),
    wallMs: () => base.wallMs() + offset,
    setTimer: (fn, ms) => base.setTimer(fn, ms),
    clearTimer: (h) => base.clearTimer(h),
    jumpWall: (ms) => void (offset += ms),
  };
}

describe('wall-clock jumps', () => {
  const HOUR = 3_600_000;
  for (const [who, jump] of [['a', HOUR], ['a', -HOUR], ['b', HOUR], ['b', -HOUR]] as const) {
    test(`${who} jumps ${jump > 0 ? '+' : '-'}1h: same step-down and takeover instants, never two leaders`, async () => {
      const w = new World();
      const clocks = { a: clockWithWall(w.clock), b: clockWithWall(w.clock) };
      const a = w.candidate('a', { clock: clocks.a });
      const b = w.candidate('b', { clock: clocks.b });
      a.elector.start();
      await w.clock.advance(0);
      b.elector.start();
      await w.clock.advance(450);
      clocks[who].jumpWall(jump);
      await w.clock.advance(200); // a renews at 600 with its (maybe jumped) wall time
      const record = await b.store.inner.read(LOCK);
      assert.equal(record!.renewedAt, w.clock.wallMs() - 50 + (who === 'a' ? jump : 0), 'the jump shows in the record (informational only)');
      a.store.mode = 'fail';
      a.store.hearing = false;
      await w.clock.advance(3000);
      // Exactly as without any jump (see the partition test above).
      assert.equal(w.at('a', 'stopped')!.atMs, 600 + TIMING.renewDeadlineMs);
      assert.equal(w.at('b', 'elected')!.atMs, 600 + TIMING.leaseDurationMs);
      // b, now leading, renews and keeps its lease on its own clock, jumped or not.
      await w.clock.advance(5000);
      assert.ok(b.elector.isLeader());
      assert.equal(w.log.filter((l) => l.event === 'elected').length, 2);
      await w.stopAll([a.elector, b.elector]);
    });
  }
});

test('a reply that arrives after the deadline does not make a leader', async () => {
  const w = new World();
  const a = w.candidate('a');
  const b = w.candidate('b');
  // a's acquisition lands at once, but its answer is 1.5 leases late (a stall, a slow network).
  let first = true;
  a.store.policy = (op) => (op === 'write' && first ? ((first = false), { kind: 'delay', beforeMs: 0, afterMs: TIMING.leaseDurationMs * 1.5 }) : { kind: 'ok' });
  a.elector.start();
  await w.clock.advance(0);
  b.elector.start();
  await w.clock.advance(TIMING.leaseDurationMs * 3);
  const elected = w.log.filter((l) => l.event === 'elected');
  assert.equal(elected[0]?.who, 'b', 'b takes over the lease a never renewed');
  const aElected = w.at('a', 'elected');
  assert.equal(aElected, undefined, `a was elected at ${aElected?.atMs}ms (term ${aElected?.term}) while b led`);
  await w.stopAll([a.elector, b.elector]);
});

/** mulberry32 is a small seeded PRNG, so a failing schedule can be replayed by its seed. */
function mulberry32(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Profile = 'healthy' | 'flaky' | 'slow' | 'partitioned';

/**
 * fuzzOnce runs three-to-five candidates through one random schedule: random timing, each
 * candidate's store randomly healthy, flaky (fails or delays calls), slow (requests applied
 * late) or partitioned (fails everything, hears nothing), candidates stopped (with or without
 * release) and replaced, sometimes under a reused identity. Returns the invariant violations.
 */
async function fuzzOnce(seed: number, options: { maxLatency: (t: Timing) => number }): Promise<{ violations: string[]; elections: number }> {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const leaseDurationMs = 300 + Math.floor(rnd() * 2700);
  const renewDeadlineMs = Math.floor(leaseDurationMs * (0.3 + rnd() * 0.6));
  const jitterFactor = rnd() * 1.5;
  const retryPeriodMs = Math.max(5, Math.floor((renewDeadlineMs * (0.1 + rnd() * 0.8)) / Math.max(1, jitterFactor)));
  const timing = { leaseDurationMs, renewDeadlineMs, retryPeriodMs, jitterFactor };
  const clock = new FakeClock();
  const backend = new MemoryStore();
  const violations: string[] = [];
  const where = () => `seed ${seed} at ${clock.monotonicMs()}ms (${JSON.stringify(timing)})`;
  let lastTerm = 0;
  let elections = 0;
  interface Cand { id: string; elector: LeaderElector; store: ControlledStore; profile: Profile; leading?: number; running: boolean }
  const cands: Cand[] = [];
  const stopping: Promise<void>[] = [];

  // Latency of one call (request + reply) stays below this.
  const maxLatency = options.maxLatency(timing);
  const policyOf = (c: Cand) => (): Action => {
    switch (c.profile) {
      case 'healthy':
        return { kind: 'ok' };
      case 'partitioned':
        return { kind: 'fail' };
      case 'slow': {
        const beforeMs = Math.floor(rnd() * maxLatency * 0.9);
        return { kind: 'delay', beforeMs, afterMs: Math.floor(rnd() * (maxLatency - beforeMs - 1)) };
      }
      case 'flaky': {
        const r = rnd();
        if (r < 0.3) return { kind: 'fail' };
        if (r < 0.6) return { kind: 'delay', beforeMs: Math.floor((rnd() * maxLatency) / 2), afterMs: Math.floor((rnd() * maxLatency) / 2) };
        return { kind: 'ok' };
      }
    }
  };
  const setProfile = (c: Cand, p: Profile) => {
    c.profile = p;
    c.store.hearing = p !== 'partitioned';
  };
  const add = (id: string) => {
    const store = new ControlledStore(new MemoryStore(backend.backend), clock);
    const elector = new LeaderElector({ store, lock: LOCK, identity: id, clock, random: rnd, ...timing });
    const c: Cand = { id, elector, store, profile: 'healthy', running: true };
    store.policy = policyOf(c);
    elector.on('storeError', () => {});
    elector.on('elected', (e) => {
      elections++;
      const others = cands.filter((o) => o !== c && o.leading !== undefined);
      if (others.length) violations.push(`${where()}: ${id} elected (term ${e.term}) while ${others.map((o) => `${o.id} (term ${o.leading})`).join(', ')} led`);
      if (c.leading !== undefined) violations.push(`${where()}: ${id} elected twice without stopped`);
      if (!elector.isLeader()) violations.push(`${where()}: ${id} elected (term ${e.term}) past its own deadline`);
      if (e.term <= lastTerm) violations.push(`${where()}: term ${e.term} after term ${lastTerm}`);
      if (e.signal.aborted) violations.push(`${where()}: ${id} elected with an aborted signal`);
      lastTerm = Math.max(lastTerm, e.term);
      c.leading = e.term;
    });
    elector.on('stopped', (e) => {
      if (c.leading !== e.term) violations.push(`${where()}: ${id} stopped term ${e.term} but led ${c.leading}`);
      if (!['stopped', 'resigned', 'step-down-requested', 'renew-deadline', 'lost'].includes(e.reason)) violations.push(`${where()}: bad reason ${e.reason}`);
      c.leading = undefined;
    });
    cands.push(c);
    elector.start();
  };

  for (let i = 0; i < 3; i++) add(`c${i}`);
  let next = 3;
  for (let step = 0; step < 40; step++) {
    const r = rnd();
    const live = cands.filter((c) => c.running);
    if (r < 0.3) {
      setProfile(pick(live), pick(['healthy', 'healthy', 'flaky', 'slow', 'partitioned'] as const));
    } else if (r < 0.38 && live.length > 1) {
      const c = pick(live);
      c.running = false;
      stopping.push(c.elector.stop());
      // A replacement, sometimes under the identity of the one it replaces (a restarted instance).
      add(rnd() < 0.4 ? c.id : `c${next++}`);
    } else if (r < 0.42) {
      const leader = live.find((c) => c.leading !== undefined);
      if (leader) void leader.elector.resign();
    }
    await clock.advance(1 + Math.floor(rnd() * leaseDurationMs * 0.7));
  }
  // Heal everything: once delayed calls are through, exactly one running candidate leads.
  for (const c of cands) setProfile(c, 'healthy');
  await clock.advance(leaseDurationMs * 8);
  const leaders = cands.filter((c) => c.leading !== undefined);
  if (leaders.length !== 1 || !leaders[0]!.running) {
    violations.push(`${where()}: after healing, leaders are [${leaders.map((c) => `${c.id}${c.running ? '' : ' (stopped)'}`).join(', ')}]`);
  }
  let done = false;
  const all = Promise.all([...stopping, ...cands.filter((c) => c.running).map((c) => c.elector.stop())]).then(() => (done = true));
  for (let i = 0; i < 200 && !done; i++) await clock.advance(leaseDurationMs);
  if (!done) violations.push(`${where()}: stop() did not finish`);
  await all;
  for (const c of cands) if (c.leading !== undefined) violations.push(`${where()}: ${c.id} stopped without emitting stopped`);
  return { violations, elections };
}

describe('randomized schedules', () => {
  const SEEDS = Number(process.env.BATON_FUZZ_SEEDS ?? 300);

  test(`${SEEDS} schedules, calls answered within the renew deadline: never two leaders, terms grow, stopped follows elected`, async () => {
    let elections = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      const r = await fuzzOnce(seed, { maxLatency: (t) => t.renewDeadlineMs * 0.95 });
      assert.deepEqual(r.violations, []);
      elections += r.elections;
    }
    assert.ok(elections > SEEDS * 2, `only ${elections} elections in ${SEEDS} schedules: the schedules exercise too little`);
  });

  test(`${SEEDS} schedules, calls answered up to two leases late`, async () => {
    for (let seed = 1; seed <= SEEDS; seed++) assert.deepEqual((await fuzzOnce(seed, { maxLatency: (t) => t.leaseDurationMs * 2 })).violations, []);
  });
});
