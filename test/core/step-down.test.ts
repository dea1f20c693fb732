/**
 * The step-down request flow (core/step-down.ts) on the fake clock and the memory store: the
 * requester only sets a flag; the holder aborts its signal first, then releases. A lease is
 * never freed behind a holder's back, and a record with the holder's identity but another term
 * is a different leadership.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LeaderElector } from '../../src/core/elector.js';
import { LeaseLostError } from '../../src/core/errors.js';
import { requestStepDown, type StepDownOutcome } from '../../src/core/step-down.js';
import type { LeaseStore, LeaseWrite, WatchListener } from '../../src/core/store.js';
import { MemoryStore } from '../../src/stores/memory/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';

const TIMING = { leaseDurationMs: 1000, renewDeadlineMs: 700, retryPeriodMs: 200, jitterFactor: 1.2 };
const LOCK = 'step';

function world() {
  const clock = new FakeClock();
  const store = new MemoryStore();
  const trace: string[] = [];
  store.watch(LOCK, (r) => trace.push(r ? `record holder=${r.holder} term=${r.term}${r.stepDownRequested ? ' flag' : ''}` : 'record gone'));
  const electors: LeaderElector[] = [];
  const candidate = (identity: string, handle: LeaseStore = new MemoryStore(store.backend)) => {
    const e = new LeaderElector({ store: handle, lock: LOCK, identity, clock, ...TIMING });
    e.on('elected', (ev) => {
      trace.push(`${identity} elected term=${ev.term}`);
      ev.signal.addEventListener('abort', () => trace.push(`${identity} aborted`));
    });
    e.on('stopped', (ev) => trace.push(`${identity} stopped ${ev.reason}`));
    electors.push(e);
    return e.start();
  };
  /** request runs requestStepDown while moving the fake clock, so its polling and the holder progress. */
  const request = async (options: { identity?: string; timeoutMs?: number } = {}): Promise<StepDownOutcome> => {
    let settled = false;
    const p = requestStepDown(new MemoryStore(store.backend), LOCK, { ...options, clock, pollMs: 50 }).finally(() => (settled = true));
    p.catch(() => {});
    for (let i = 0; i < 400 && !settled; i++) await clock.advance(25);
    return p;
  };
  const stopAll = () => Promise.all(electors.map((e) => e.stop()));
  return { clock, store, trace, candidate, request, stopAll };
}

/**
 * remote is a handle whose change notifications arrive 5 ms late, as they do for a candidate in
 * another process (the writer's own handle hears its writes at once, e.g. SQLite's direct delivery).
 */
function remote(handle: MemoryStore, clock: FakeClock): MemoryStore {
  const watch = (lock: string, listener: WatchListener) => handle.watch(lock, (r) => void clock.setTimer(() => listener(r), 5));
  return Object.assign(Object.create(handle) as MemoryStore, { watch });
}

const write = (holder: string, newTerm: boolean, stepDownRequested = false): LeaseWrite => ({
  holder, newTerm, leaseDurationMs: 60_000, acquiredAt: 1, renewedAt: 1, transitions: 1, stepDownRequested, metadata: {},
});

describe('requestStepDown', () => {
  for (const notify of [true, false]) {
    test(`the holder aborts its signal first, then releases (${notify ? 'told by notification' : 'finds out at its next renewal'})`, async () => {
      const w = world();
      const handle = new MemoryStore(w.store.backend);
      const quiet = notify ? handle : Object.assign(Object.create(handle) as MemoryStore, { watch: undefined });
      const a = w.candidate('a', quiet);
      await w.clock.advance(0);
      w.candidate('b');
      await w.clock.advance(300);
      w.trace.length = 0;
      const out = await w.request();
      assert.equal(out.outcome, 'released');
      assert.notDeepEqual(out.record && [out.record.holder, out.record.term], ['a', 1]);
      assert.equal(a.isLeader() && a.term === 1, false);
      // Order: the flag is set (holder and term kept), a stops its work, only then the lease is freed.
      const i = (s: string) => w.trace.indexOf(s);
      assert.ok(i('record holder=a term=1 flag') >= 0, w.trace.join('\n'));
      assert.ok(i('a aborted') > i('record holder=a term=1 flag'), w.trace.join('\n'));
      assert.ok(i('a stopped step-down-requested') > i('a aborted'), w.trace.join('\n'));
      assert.ok(i('record holder=null term=1') > i('a stopped step-down-requested'), w.trace.join('\n'));
      await w.stopAll();
    });
  }

  test('after a step-down request, a standby in another process takes over', async () => {
    const w = world();
    w.candidate('a');
    await w.clock.advance(0);
    const b = w.candidate('b', remote(new MemoryStore(w.store.backend), w.clock));
    await w.clock.advance(300);
    await w.request();
    await w.clock.advance(TIMING.retryPeriodMs * 3);
    const holder = b.leader()?.holder;
    await w.stopAll();
    assert.equal(holder, 'b', w.trace.join('\n'));
  });

  test('--identity that does not hold the lock: not-holder, and the record is left untouched', async () => {
    const w = world();
    w.candidate('a');
    await w.clock.advance(100);
    const before = await w.store.read(LOCK);
    const out = await w.request({ identity: 'someone-else' });
    assert.equal(out.outcome, 'not-holder');
    const after = await w.store.read(LOCK);
    assert.equal(after?.holder, 'a');
    assert.equal(after?.stepDownRequested, false);
    assert.ok(after!.revision === before!.revision || after!.renewedAt > before!.renewedAt, 'only a\'s own renewals changed it');
    await w.stopAll();
  });

  test('a lock never held, or released: not-holder', async () => {
    const w = world();
    assert.equal((await w.request()).outcome, 'not-holder');
    const made = await w.store.write(LOCK, null, write('x', true));
    assert.ok(made.ok);
    await w.store.write(LOCK, made.record.revision, { ...write('x', false), holder: null } as LeaseWrite);
    assert.equal((await w.request()).outcome, 'not-holder');
  });

  test('a holder that never lets go: LeaseLostError after the timeout, and the lease is not overridden', async () => {
    const w = world();
    const made = await w.store.write(LOCK, null, write('ghost', true)); // no process behind it
    assert.ok(made.ok);
    const t0 = w.clock.monotonicMs();
    await assert.rejects(w.request({ timeoutMs: 500 }), (err: unknown) => {
      assert.ok(err instanceof LeaseLostError);
      assert.match(err.message, /"step" is still held by ghost \(term 1\)/);
      return true;
    });
    assert.ok(w.clock.monotonicMs() - t0 >= 500);
    const after = await w.store.read(LOCK);
    assert.deepEqual([after?.holder, after?.term, after?.stepDownRequested], ['ghost', 1, true]);
  });

  test('the same identity under a new term counts as released (it is another leadership)', async () => {
    const w = world();
    const made = await w.store.write(LOCK, null, write('twin', true));
    assert.ok(made.ok);
    const pending = w.request({ identity: 'twin', timeoutMs: 5_000 });
    await w.clock.advance(0);
    const flagged = (await w.store.read(LOCK))!;
    assert.equal(flagged.stepDownRequested, true);
    // The twin's record is taken over by another process with the same identity: a new term.
    assert.ok((await w.store.write(LOCK, flagged.revision, write('twin', true))).ok);
    const out = await pending;
    assert.equal(out.outcome, 'released');
    assert.deepEqual([out.record?.holder, out.record?.term], ['twin', 2]);
  });
});
