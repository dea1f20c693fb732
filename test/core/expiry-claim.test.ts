/**
 * When a standby claims after its leader crashed, on a fake clock: at the expiry it timed, it
 * writes at once (no read first); on a server-expiry store whose feed reports every renewal
 * (`watchSeesRenewals`, Redis) it sends a create-if-absent at the server's expiry instead of
 * waiting for the server to notice, tries that once per revision, and sends nothing at all
 * while the leader renews.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LeaderElector } from '../../src/core/elector.js';
import type { Clock, TimerHandle } from '../../src/core/clock.js';
import type { LeaseRecord, LeaseStore, LeaseWrite, StoreCapabilities, WatchListener, WriteResult } from '../../src/core/store.js';
import { MemoryStore } from '../../src/stores/memory/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';

const TIMING = { leaseDurationMs: 1000, renewDeadlineMs: 700, retryPeriodMs: 200, jitterFactor: 1.2 };

/**
 * ExpiringServer keeps one lease the way Redis does: a record dropped `lagMs` after its lease
 * ran out on the server's count, lazily when touched, and by an "active cycle" `cycleMs` after
 * that, which tells the watchers (an `expired` event). Every write is published.
 */
class ExpiringServer {
  record: LeaseRecord | null = null;
  lastWriteAtMs = NaN;
  private expiresAtMs = 0;
  private term = 0;
  private revision = 0;
  private cycle?: TimerHandle;
  readonly listeners = new Set<WatchListener>();
  constructor(
    private readonly clock: Clock,
    private readonly lagMs: number,
    private readonly cycleMs: number,
  ) {}

  expireIfDue(): void {
    if (this.record && this.clock.monotonicMs() > this.expiresAtMs) this.publish((this.record = null));
  }

  write(expected: string | null, next: LeaseWrite): WriteResult {
    this.expireIfDue();
    const cur = this.record;
    if (expected === null ? cur !== null : cur?.revision !== expected) return { ok: false, current: cur };
    if (next.newTerm) this.term++;
    this.lastWriteAtMs = this.clock.monotonicMs();
    if (next.holder === null) {
      this.publish((this.record = null));
      return { ok: true, record: { ...(cur as LeaseRecord), holder: null, revision: String(++this.revision) } };
    }
    const record: LeaseRecord = { lock: 'x', ...next, term: this.term, revision: String(++this.revision) };
    this.record = record;
    this.expiresAtMs = this.lastWriteAtMs + next.leaseDurationMs + this.lagMs;
    if (this.cycle) this.clock.clearTimer(this.cycle);
    this.cycle = this.clock.setTimer(() => this.expireIfDue(), this.expiresAtMs - this.lastWriteAtMs + this.cycleMs);
    this.publish(record);
    return { ok: true, record };
  }

  private publish(record: LeaseRecord | null): void {
    for (const l of this.listeners) queueMicrotask(() => l(record));
  }
}

/** One process's handle on the ExpiringServer; counts its reads and acquiring writes. */
class ExpiringView implements LeaseStore {
  readonly kind = 'expiring-view';
  readonly capabilities: StoreCapabilities = { serverExpiry: true };
  readonly watchLive = true;
  readonly watchSeesExpiry = true;
  readonly watchSeesRenewals = true;
  reads = 0;
  /** Acquiring writes (a new leader's first renewal may follow at once: the server's removal is news to it). */
  claims = 0;
  constructor(private readonly server: ExpiringServer) {}
  async read(): Promise<LeaseRecord | null> {
    this.reads++;
    this.server.expireIfDue();
    return this.server.record;
  }
  async write(_lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    if (next.newTerm) this.claims++;
    return this.server.write(expected, next);
  }
  watch(_lock: string, listener: WatchListener): () => void {
    this.server.listeners.add(listener);
    return () => this.server.listeners.delete(listener);
  }
  async close(): Promise<void> {}
}

/** A leader and a standby on `server`; the leader crashes (stops renewing, no release) at `crash()`. */
async function crashOnServer(clock: FakeClock, server: ExpiringServer) {
  const a = new ExpiringView(server);
  const b = new ExpiringView(server);
  const leader = new LeaderElector({ store: a, lock: 'x', identity: 'a', clock, releaseOnStop: false, ...TIMING });
  const standby = new LeaderElector({ store: b, lock: 'x', identity: 'b', clock, ...TIMING });
  let electedAtMs = NaN;
  standby.on('elected', () => (electedAtMs = clock.monotonicMs()));
  leader.start();
  await clock.advance(0);
  standby.start();
  await clock.advance(100);
  assert.equal(standby.leader()?.holder, 'a');
  return { a, b, leader, standby, elected: () => electedAtMs };
}

/** advanceUntil moves the fake clock 1 ms at a time until `done()` (at most `maxMs`). */
async function advanceUntil(clock: FakeClock, done: () => boolean, maxMs: number): Promise<void> {
  for (let i = 0; i < maxMs && !done(); i++) await clock.advance(1);
}

describe('a standby claims at the expiry it timed', () => {
  test('server expiry, renewals heard: nothing sent while the leader renews, then one create at the expiry', async () => {
    const clock = new FakeClock();
    const server = new ExpiringServer(clock, 0, 100);
    const { b, leader, standby, elected } = await crashOnServer(clock, server);
    const before = { reads: b.reads, claims: b.claims };
    await clock.advance(TIMING.leaseDurationMs * 10);
    assert.deepEqual({ reads: b.reads, claims: b.claims }, before, 'a standby behind a renewing leader sends nothing');
    await leader.stop(); // releaseOnStop false: the record stays, as after a crash
    const lastWrite = server.lastWriteAtMs;
    await advanceUntil(clock, () => standby.isLeader(), 3000);
    assert.ok(standby.isLeader(), 'the standby leads');
    const took = elected() - lastWrite;
    // The server drops the record just past its lease; the active cycle would only say so 100 ms on.
    assert.ok(took > TIMING.leaseDurationMs && took <= TIMING.leaseDurationMs + 5, `elected ${took} ms after the last renewal`);
    assert.equal(b.reads, before.reads, 'no read before the claim');
    assert.equal(b.claims, before.claims + 1, 'one claim: the create');
    await standby.stop();
  });

  test('a server that drops the record later than its word: one claim, then the expiry event, never a loop', async () => {
    const clock = new FakeClock();
    const server = new ExpiringServer(clock, 30, 50);
    const { b, leader, standby, elected } = await crashOnServer(clock, server);
    await clock.advance(TIMING.leaseDurationMs * 3);
    const before = { reads: b.reads, claims: b.claims };
    await leader.stop();
    const lastWrite = server.lastWriteAtMs;
    await advanceUntil(clock, () => standby.isLeader(), 3000);
    assert.ok(standby.isLeader(), 'the standby leads');
    const took = elected() - lastWrite;
    // The record goes at lease + 30 ms on the server, and only the active cycle (50 ms later) says so.
    assert.ok(took >= TIMING.leaseDurationMs + 80 && took <= TIMING.leaseDurationMs + 85, `elected ${took} ms after the last renewal`);
    assert.equal(b.claims - before.claims, 2, 'the early create, then the one after the event');
    assert.equal(b.reads, before.reads);
    await standby.stop();
  });

  test('own-observation expiry with a live feed: the compare-and-set goes out at the expiry with no read first', async () => {
    const clock = new FakeClock();
    const backend = new MemoryStore();
    const leader = new LeaderElector({ store: new MemoryStore(backend.backend), lock: 'm', identity: 'a', clock, releaseOnStop: false, ...TIMING });
    const inner = new MemoryStore(backend.backend);
    let reads = 0;
    const counted = new Proxy(inner, {
      get(target, prop) {
        if (prop === 'read') return (lock: string) => (reads++, target.read(lock));
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const standby = new LeaderElector({ store: counted, lock: 'm', identity: 'b', clock, ...TIMING });
    let electedAtMs = NaN;
    let lastRenewalMs = NaN;
    leader.on('renewed', () => (lastRenewalMs = clock.monotonicMs()));
    standby.on('elected', () => (electedAtMs = clock.monotonicMs()));
    leader.start();
    await clock.advance(0);
    standby.start();
    await clock.advance(TIMING.leaseDurationMs * 3);
    const readsBefore = reads;
    await leader.stop();
    await advanceUntil(clock, () => standby.isLeader(), 3000);
    assert.ok(standby.isLeader(), 'the standby leads');
    assert.equal(reads, readsBefore, 'no read between the crash and the election');
    const took = electedAtMs - lastRenewalMs;
    assert.ok(took >= TIMING.leaseDurationMs && took <= TIMING.leaseDurationMs + 2, `elected ${took} ms after the last renewal`);
    await standby.stop();
  });
});
