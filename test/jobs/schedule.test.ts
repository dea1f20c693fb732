/**
 * Cron schedules (croner) and the missed-slot rule, as pure functions with explicit instants.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { InvalidConfigError } from '../../src/core/errors.js';
import { Schedule, planSlots, validateMissedPolicy, validateTimeZone } from '../../src/jobs/schedule.js';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? ms : new Date(ms).toISOString());

describe('Schedule', () => {
  test('every second (6 fields): next, latest at-or-before, previous, counting', () => {
    const s = new Schedule('* * * * * *');
    assert.equal(iso(s.next(at('2026-01-01T00:00:00.500Z'))), '2026-01-01T00:00:01.000Z');
    assert.equal(iso(s.next(at('2026-01-01T00:00:01.000Z'))), '2026-01-01T00:00:02.000Z');
    assert.equal(iso(s.latestAtOrBefore(at('2026-01-01T00:00:01.000Z'))), '2026-01-01T00:00:01.000Z');
    assert.equal(iso(s.latestAtOrBefore(at('2026-01-01T00:00:01.999Z'))), '2026-01-01T00:00:01.000Z');
    assert.equal(iso(s.previous(at('2026-01-01T00:00:01.000Z'))), '2026-01-01T00:00:00.000Z');
    assert.equal(s.countBetween(at('2026-01-01T00:00:00Z'), at('2026-01-01T00:00:05Z')), 4);
  });

  test('time zones and DST: 02:30 daily in Europe/Berlin on the spring-forward day', () => {
    const s = new Schedule('30 2 * * *', 'Europe/Berlin');
    // Winter: 02:30 CET is 01:30Z.
    assert.equal(iso(s.next(at('2026-01-10T00:00:00Z'))), '2026-01-10T01:30:00.000Z');
    // 2026-03-29 02:30 does not exist in Berlin; croner runs a fixed-time job once, after the gap.
    const dstDay = s.next(at('2026-03-28T12:00:00Z'))!;
    assert.equal(iso(dstDay), '2026-03-29T01:00:00.000Z');
    assert.equal(iso(s.next(dstDay)), '2026-03-30T00:30:00.000Z');
  });

  test('bad expressions and zones are config errors naming the value', () => {
    assert.throws(() => new Schedule('bogus'), (e: Error) => e instanceof InvalidConfigError && /"bogus" is not a valid cron expression/.test(e.message));
    assert.throws(() => new Schedule('61 * * * *'), (e: Error) => e instanceof InvalidConfigError && /minute/.test(e.message));
    assert.throws(() => new Schedule('   '), (e: Error) => e instanceof InvalidConfigError && /empty/.test(e.message));
    assert.throws(() => new Schedule('* * * * *', 'Mars/Base', { timezone: '--tz' }), (e: Error) => e instanceof InvalidConfigError && /^--tz: "Mars\/Base"/.test(e.message));
    assert.throws(() => validateTimeZone(''), InvalidConfigError);
    assert.equal(validateTimeZone('America/New_York'), 'America/New_York');
    assert.throws(() => validateMissedPolicy('never', '--missed'), (e: Error) => e instanceof InvalidConfigError && /--missed: "never".*skip or latest/.test(e.message));
  });
});

describe('planSlots', () => {
  const every5s = new Schedule('*/5 * * * * *');
  const t0 = at('2026-01-01T00:00:00Z');

  test('nothing due before the next slot', () => {
    assert.deepEqual(planSlots(every5s, t0, t0 + 4_999, t0 + 5_000, 'latest'), { skipped: 0, cursorMs: t0 });
  });

  test('the armed slot runs on time, even when the timer fired late', () => {
    assert.deepEqual(planSlots(every5s, t0, t0 + 5_800, t0 + 5_000, 'skip'), { run: { slotMs: t0 + 5_000, late: false }, skipped: 0, cursorMs: t0 + 5_000 });
  });

  test('latest: after an outage the newest missed slot runs once, late; the older ones are skipped', () => {
    const plan = planSlots(every5s, t0, t0 + 17_000, undefined, 'latest');
    assert.deepEqual(plan, { run: { slotMs: t0 + 15_000, late: true }, skipped: 2, cursorMs: t0 + 15_000 });
  });

  test('skip: every missed slot is skipped and counted', () => {
    assert.deepEqual(planSlots(every5s, t0, t0 + 17_000, undefined, 'skip'), { skipped: 3, cursorMs: t0 + 15_000 });
  });

  test('a stalled leader: its armed slot was overtaken by a newer one, which is treated as missed', () => {
    assert.deepEqual(planSlots(every5s, t0, t0 + 11_000, t0 + 5_000, 'skip'), { skipped: 2, cursorMs: t0 + 10_000 });
    assert.deepEqual(planSlots(every5s, t0, t0 + 11_000, t0 + 5_000, 'latest'), { run: { slotMs: t0 + 10_000, late: true }, skipped: 1, cursorMs: t0 + 10_000 });
  });

  test('latest does not catch up a slot older than its own interval', () => {
    // 09:00 and 10:00 daily: at 08:00 the next day, the 10:00 slot is 22 h old but its interval is 1 h.
    const s = new Schedule('0 9,10 * * *');
    const plan = planSlots(s, at('2026-01-01T09:00:00Z'), at('2026-01-02T08:00:00Z'), undefined, 'latest');
    assert.deepEqual(plan, { skipped: 1, cursorMs: at('2026-01-01T10:00:00Z') });
    // At 10:30 the same day it is young enough.
    assert.deepEqual(planSlots(s, at('2026-01-01T09:00:00Z'), at('2026-01-01T10:30:00Z'), undefined, 'latest').run, { slotMs: at('2026-01-01T10:00:00Z'), late: true });
  });

  test('a wall clock behind the last claim plans nothing (no slot is ever claimed twice)', () => {
    assert.deepEqual(planSlots(every5s, t0 + 60_000, t0 + 20_000, undefined, 'latest'), { skipped: 0, cursorMs: t0 + 60_000 });
  });
});
