/**
 * ProgressWatch's rules on a FakeClock (the process tests in progress-timeout.test.ts show the
 * whole path): which notify messages count, WATCHDOG=trigger, WATCHDOG_USEC changing the
 * timeout, and a heartbeat file's new modification time.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { utimesSync, writeFileSync } from 'node:fs';
import { ProgressWatch } from '../../src/cli/progress-watch.js';
import { parseNotify } from '../../src/cli/notify-socket.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { TempDir } from '../harness/cli.js';

const watch = (clock: FakeClock, timeoutMs: number, heartbeatFile?: string) => {
  const hung: string[] = [];
  const w = new ProgressWatch({ clock, timeoutMs, heartbeatFile, onHung: (why) => hung.push(why) });
  return { w, hung };
};

test('parseNotify splits a datagram into its assignments', () => {
  assert.deepEqual([...parseNotify('READY=1\nSTATUS=a=b\n\nnoise\nWATCHDOG=1')], [['READY', '1'], ['STATUS', 'a=b'], ['WATCHDOG', '1']]);
});

test('only WATCHDOG=1 is a heartbeat; READY=1 and STATUS are not', async () => {
  const clock = new FakeClock();
  const { w, hung } = watch(clock, 1000);
  await clock.advance(600);
  w.notified(parseNotify('WATCHDOG=1'));
  await clock.advance(600);
  assert.deepEqual(hung, [], 'a heartbeat at 600 ms moves the deadline to 1600 ms');
  w.notified(parseNotify('READY=1\nSTATUS=busy'));
  await clock.advance(400);
  assert.deepEqual(hung, ['no heartbeat within the progress timeout (1s)']);
  w.notified(parseNotify('WATCHDOG=1'));
  await clock.advance(5000);
  assert.equal(hung.length, 1, 'once');
});

test('WATCHDOG=trigger is hung at once; WATCHDOG_USEC changes the timeout', async () => {
  const clock = new FakeClock();
  const a = watch(clock, 1000);
  a.w.notified(parseNotify('WATCHDOG=trigger'));
  assert.deepEqual(a.hung, ['the command reported itself hung (WATCHDOG=trigger)']);
  const b = watch(clock, 1000);
  b.w.notified(parseNotify('WATCHDOG_USEC=5000000\nWATCHDOG=1'));
  await clock.advance(4900);
  assert.deepEqual(b.hung, [], 'the timeout is now 5 s');
  await clock.advance(200);
  assert.equal(b.hung.length, 1);
  b.w.close();
});

test('a new modification time of the heartbeat file is a heartbeat', async () => {
  const dir = new TempDir();
  try {
    const file = dir.join('heartbeat');
    writeFileSync(file, '');
    utimesSync(file, 1000, 1000);
    const clock = new FakeClock();
    const { w, hung } = watch(clock, 1000, file);
    for (let i = 1; i <= 5; i++) {
      await clock.advance(700);
      utimesSync(file, 1000 + i, 1000 + i);
    }
    await clock.advance(200);
    assert.deepEqual(hung, [], 'touched every 700 ms for 3.5 s');
    await clock.advance(1000);
    assert.equal(hung.length, 1);
    w.close();
  } finally {
    dir.remove();
  }
});
