/**
 * progressTimeoutMs and the `elected` event's heartbeat() (issue 28): a leader whose work stops
 * reporting progress steps down ('hung'), releases at once, records why in the ledger, and backs
 * off — longer each time in a row — so a fleet whose work hangs everywhere does not ping-pong.
 * The timing rules are exact on a FakeClock.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaderElector, type StoppedEvent } from '../../src/core/elector.js';
import { HANG_BACKOFF_MAX_MS, HangStreak, hangBackoffMs, maxHungTerms, readStepDowns } from '../../src/core/hang-backoff.js';
import { InvalidConfigError } from '../../src/core/errors.js';
import { MemoryStore } from '../../src/stores/memory/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';

const TIMING = { leaseDurationMs: 2000, renewDeadlineMs: 1400, retryPeriodMs: 400, jitterFactor: 0 };

test('heartbeats keep leadership; silence for progressTimeoutMs steps down (hung), releases and records why', async () => {
  const clock = new FakeClock();
  const store = new MemoryStore();
  const e = new LeaderElector({ store, lock: 'work', identity: 'a', clock, progressTimeoutMs: 1000, ...TIMING });
  const stops: StoppedEvent[] = [];
  e.on('stopped', (s) => stops.push(s));
  e.start();
  const won = await e.elected();
  for (let i = 0; i < 10; i++) {
    await clock.advance(900);
    won.heartbeat();
  }
  assert.equal(e.isLeader(), true, 'nine seconds of heartbeats every 0.9 s: still leading');
  assert.deepEqual(stops, []);
  await clock.advance(999);
  assert.equal(e.isLeader(), true, 'not before the timeout');
  await clock.advance(1);
  assert.equal(e.isLeader(), false);
  assert.equal(won.signal.aborted, true);
  assert.deepEqual(stops, [{ term: won.term, reason: 'hung', note: 'no progress within 1000ms' }]);
  assert.equal((await store.read('work'))?.holder, null, 'released at once');
  const recorded = (await readStepDowns(store, 'work')).get('work');
  assert.equal(recorded?.holder, 'a');
  assert.equal(recorded?.reason, 'hung');
  assert.equal(recorded?.backoffMs, 1000, 'the first back-off is the progress timeout (at least 1 s)');
  // Backing off: it does not campaign again within the back-off, and does after it.
  await clock.advance(990);
  assert.equal((await store.read('work'))?.holder, null);
  await clock.advance(20);
  assert.equal((await store.read('work'))?.holder, 'a');
  won.heartbeat(); // a heartbeat for an ended leadership is ignored
  await e.stop();
});

test('without a heartbeat at all, the first one is due progressTimeoutMs after the election; without the option nothing is due', async () => {
  const clock = new FakeClock();
  const store = new MemoryStore();
  const plain = new LeaderElector({ store, lock: 'plain', identity: 'p', clock, ...TIMING }).start();
  const watched = new LeaderElector({ store, lock: 'watched', identity: 'w', clock, progressTimeoutMs: 3000, ...TIMING }).start();
  const [p, w] = await Promise.all([plain.elected(), watched.elected()]);
  p.heartbeat(); // does nothing without the option
  await clock.advance(2999);
  assert.equal(watched.isLeader(), true);
  await clock.advance(1);
  assert.equal(watched.isLeader(), false);
  assert.equal(w.signal.aborted, true);
  await clock.advance(60_000);
  assert.equal(plain.isLeader(), true, 'leadership without progressTimeoutMs never depends on heartbeats');
  await Promise.all([plain.stop(), watched.stop()]);
});

test('the back-off grows with each hung term in a row, is capped, and starts over after a healthy term', () => {
  assert.equal(hangBackoffMs(2000, 1), 2000);
  assert.equal(hangBackoffMs(2000, 2), 4000);
  assert.equal(hangBackoffMs(2000, 5), 32_000);
  assert.equal(hangBackoffMs(2000, 40), HANG_BACKOFF_MAX_MS);
  assert.equal(hangBackoffMs(10, 1), 1000, 'at least one second');
  const s = new HangStreak(5000);
  assert.deepEqual([s.hung(100), s.hung(100), s.hung(100)], [5000, 10_000, 20_000]);
  s.healthy();
  assert.equal(s.hung(100), 5000);
  assert.equal(s.hung(100), 10_000);
  assert.equal(s.hung(HANG_BACKOFF_MAX_MS + 1), 5000, 'a term that led longer than the cap before hanging starts over');
});

test('two electors whose work always hangs: leadership changes hands ever more slowly', async () => {
  const clock = new FakeClock();
  const store = new MemoryStore();
  const changes: number[] = [];
  let last = '';
  store.watch('fleet', (r) => {
    const key = r?.holder ? `${r.holder}/${r.term}` : '';
    if (key && key !== last) changes.push(clock.monotonicMs());
    if (key) last = key;
  });
  const es = ['a', 'b'].map((identity) => new LeaderElector({ store, lock: 'fleet', identity, clock, progressTimeoutMs: 1000, ...TIMING }).start());
  for (let t = 0; t < 120_000; t += 100) await clock.advance(100);
  await Promise.all(es.map((e) => e.stop()));
  // Each instance's wait doubles from 1 s: two minutes hold at most maxHungTerms terms each
  // (7); without a back-off there would be a term a second or so, about 120.
  const bound = 2 * maxHungTerms(120_000, 1000, 1000);
  assert.equal(bound, 14);
  assert.ok(changes.length >= 4 && changes.length <= bound, `leadership changes in 2 minutes: ${changes.length}`);
  const gaps = changes.slice(1).map((x, i) => x - changes[i]!);
  assert.ok(Math.max(...gaps) >= 16_000, `the pauses between terms grow: ${gaps.join(', ')}`);
});

test('progressTimeoutMs is checked when given', () => {
  for (const bad of [0, -1, Number.NaN, '5s' as unknown as number, 25 * 3600 * 1000]) {
    assert.throws(() => new LeaderElector({ store: new MemoryStore(), lock: 'x', progressTimeoutMs: bad }), InvalidConfigError, String(bad));
  }
});
