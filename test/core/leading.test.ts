/**
 * One definition of leading: holding the lease AND its local deadline not passed. isLeader(),
 * term, signal, leader().isSelf, leadershipWindow() and elected() must all agree, even when the
 * deadline timer is late (a blocked event loop): whoever asks after the deadline finds the
 * leadership ended, its signal aborted and `stopped` emitted with 'renew-deadline'.
 *
 * The clock is the fake clock with a skew that moves monotonic time without firing timers,
 * which is what a late timer looks like from inside the process.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Clock } from '../../src/core/clock.js';
import { LeaderElector, type StopReason } from '../../src/core/elector.js';
import { MemoryStore } from '../../src/stores/memory/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';

const TIMING = { leaseDurationMs: 1000, renewDeadlineMs: 700, retryPeriodMs: 200, jitterFactor: 1.2 };

test('after the deadline, every view says not leading, even before the deadline timer fires', async () => {
  const { fake, clock, skew } = skewedClock();
  const e = new LeaderElector({ store: new MemoryStore(), lock: 'leading', identity: 'a', clock, ...TIMING });
  const stops: StopReason[] = [];
  e.on('stopped', (ev) => stops.push(ev.reason));
  e.start();
  const won = await e.elected();
  assert.equal(e.isLeader(), true);
  assert.equal(e.term, won.term);
  assert.equal(e.signal, won.signal);
  assert.equal(e.leader()?.isSelf, true);
  assert.ok(e.leadershipWindow());

  // Time passes the deadline, but no timer has run: the timer is late.
  skew(TIMING.renewDeadlineMs);
  assert.equal(won.signal.aborted, false, 'nothing has looked yet');
  assert.equal(e.leader()?.isSelf, false, 'leader() agrees with isLeader()');
  assert.equal(won.signal.aborted, true, 'the signal is aborted by the first look after the deadline');
  assert.deepEqual(stops, ['renew-deadline']);
  assert.equal(e.isLeader(), false);
  assert.equal(e.term, undefined);
  assert.equal(e.signal, undefined);
  assert.equal(e.leadershipWindow(), undefined);
  // The store still works: the elector freed its record and campaigns again, under a new term.
  const again = await e.elected();
  assert.ok(again.term > won.term, 'elected() resolves with a new leadership, not the ended one');
  assert.notEqual(again.signal, won.signal);
  await e.stop();
});

test('before the deadline the views agree that it leads', async () => {
  const clock = new FakeClock();
  const e = new LeaderElector({ store: new MemoryStore(), lock: 'leading2', identity: 'a', clock, ...TIMING });
  e.start();
  const won = await e.elected();
  await clock.advance(TIMING.retryPeriodMs * 3);
  assert.equal(e.isLeader(), true);
  assert.equal(e.leader()?.isSelf, true);
  assert.equal(e.signal, won.signal);
  assert.equal(won.signal.aborted, false);
  await e.stop();
  assert.equal(won.signal.aborted, true);
});

test('a leadership that ends while its `elected` listeners run: every one of them hears `elected` before anyone hears `stopped`', async () => {
  const { fake, clock, skew } = skewedClock();
  const e = new LeaderElector({ store: new MemoryStore(), lock: 'leading3', identity: 'a', clock, ...TIMING });
  const heard: string[] = [];
  // The first listener finds the deadline passed (a slow acquisition that came back just in
  // time, then a pause): its look ends the leadership on the spot.
  e.once('elected', ({ term, deadlineMs }) => {
    heard.push(`first elected ${term}`);
    skew(deadlineMs - fake.monotonicMs());
    assert.equal(e.isLeader(), false, 'past the deadline, not leading');
  });
  e.once('elected', ({ term, signal }) => heard.push(`second elected ${term}, aborted ${signal.aborted}`));
  e.once('stopped', ({ term, reason }) => heard.push(`stopped ${term} ${reason}`));
  e.start();
  await fake.advance(0);
  for (let i = 0; i < 5 && heard.length < 3; i++) await fake.advance(1);
  assert.deepEqual(heard, ['first elected 1', 'second elected 1, aborted true', 'stopped 1 renew-deadline']);
  skew(0);
  await e.stop();
});

/** skewedClock is a fake clock whose monotonic reading can jump ahead of its timers (a late timer). */
function skewedClock(): { fake: FakeClock; clock: Clock; skew: (ms: number) => void } {
  const fake = new FakeClock();
  let skewMs = 0;
  const clock: Clock = {
    monotonicMs: () => fake.monotonicMs() + skewMs,
    wallMs: () => fake.wallMs(),
    setTimer: (fn, ms) => fake.setTimer(fn, ms),
    clearTimer: (h) => fake.clearTimer(h),
  };
  return { fake, clock, skew: (ms) => (skewMs = ms) };
}
