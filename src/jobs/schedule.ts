/**
 * Cron schedules (parsed by croner: 5, 6 or 7 fields, seconds, time zones, DST) and the pure
 * rule that decides, at one moment, which slot to run and which to count as missed.
 */
import { Cron } from 'croner';
import { InvalidConfigError, errorMessage } from '../core/errors.js';

/** MissedPolicy: what a new leader does with slots that came due while nobody was running them. */
export type MissedPolicy = 'skip' | 'latest';
/** MISSED_POLICIES lists the accepted values of `--missed` / `missed`. */
export const MISSED_POLICIES: readonly MissedPolicy[] = Object.freeze(['skip', 'latest']);

/** validateMissedPolicy checks `--missed` (InvalidConfigError naming the accepted values). */
export function validateMissedPolicy(value: unknown, what = 'missed'): MissedPolicy {
  if (value === 'skip' || value === 'latest') return value;
  throw new InvalidConfigError(`${what}: "${String(value)}" is not a policy; use skip or latest`);
}

/** validateTimeZone checks an IANA zone name such as Europe/Berlin (InvalidConfigError if unknown). */
export function validateTimeZone(zone: unknown, what = 'timezone'): string {
  if (typeof zone !== 'string' || zone.trim() === '') throw new InvalidConfigError(`${what}: must not be empty`);
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
  } catch {
    throw new InvalidConfigError(`${what}: "${zone}" is not a known time zone (use an IANA name such as UTC or Europe/Berlin)`);
  }
  return zone;
}

/** MAX_COUNTED_SLOTS caps how many missed slots are counted one by one after a long outage. */
export const MAX_COUNTED_SLOTS = 10_000;

/**
 * Schedule is a parsed cron expression in one time zone. All instants are ms since the epoch;
 * slots are whole seconds.
 */
export class Schedule {
  readonly expression: string;
  readonly timezone: string;
  private readonly cron: Cron;

  /** Parses `expression`; throws InvalidConfigError with croner's reason when it is not valid. `names` label the values in errors. */
  constructor(expression: string, timezone = 'UTC', names: { schedule?: string; timezone?: string } = {}) {
    const what = names.schedule ?? 'schedule';
    if (typeof expression !== 'string' || expression.trim() === '') throw new InvalidConfigError(`${what}: the cron expression is empty`);
    this.timezone = validateTimeZone(timezone, names.timezone ?? 'timezone');
    this.expression = expression.trim();
    try {
      this.cron = new Cron(this.expression, { timezone: this.timezone, paused: true });
    } catch (err) {
      throw new InvalidConfigError(`${what}: "${expression}" is not a valid cron expression: ${errorMessage(err).replace(/^Cron\w*: /, '')}`);
    }
    if (this.cron.nextRun(new Date()) === null && this.cron.previousRuns(1, new Date()).length === 0) {
      throw new InvalidConfigError(`${what}: "${expression}" never fires`);
    }
  }

  /** next is the first slot strictly after `afterMs`, or null if the schedule has ended. */
  next(afterMs: number): number | null {
    return this.cron.nextRun(new Date(afterMs))?.getTime() ?? null;
  }

  /** latestAtOrBefore is the newest slot ≤ `ms`, or null. */
  latestAtOrBefore(ms: number): number | null {
    // previousRuns is strictly before its reference; slots are whole seconds, so +1 ms includes `ms`.
    return this.cron.previousRuns(1, new Date(ms + 1))[0]?.getTime() ?? null;
  }

  /** previous is the newest slot strictly before `ms`, or null. */
  previous(ms: number): number | null {
    return this.cron.previousRuns(1, new Date(ms))[0]?.getTime() ?? null;
  }

  /** countBetween counts slots s with fromMs < s < toMs, up to MAX_COUNTED_SLOTS. */
  countBetween(fromMs: number, toMs: number): number {
    let n = 0;
    for (let s = this.next(fromMs); s !== null && s < toMs && n < MAX_COUNTED_SLOTS; s = this.next(s)) n++;
    return n;
  }
}

/** SlotPlan is what to do at one moment. */
export interface SlotPlan {
  /** The slot to run now, if any; `late` when it was missed and is being caught up. */
  readonly run?: { readonly slotMs: number; readonly late: boolean };
  /** Slots that came due and will never run (counted up to MAX_COUNTED_SLOTS). */
  readonly skipped: number;
  /** The newest slot now decided (run or skipped); nothing at or before it is considered again. */
  readonly cursorMs: number;
}

/**
 * planSlots decides which due slot, if any, to run at `nowMs`. Due slots are those after
 * `cursorMs` (the last slot already decided) and at or before `nowMs`. Let L be the newest:
 *
 * 1. If L is the slot the leader armed a timer for (`armedMs`) it is on time: run it, even if
 *    the timer fired a little late. Older due slots were skipped.
 * 2. Otherwise L came due while nobody was waiting for it (no leader, a run that overran, a
 *    stalled process): it is missed. With `skip` it is skipped. With `latest` it runs once,
 *    late, if it is younger than its own interval (the gap from the slot before it to L), so
 *    a catch-up never runs work that is staler than one period; all older slots are skipped.
 */
export function planSlots(schedule: Schedule, cursorMs: number, nowMs: number, armedMs: number | undefined, policy: MissedPolicy): SlotPlan {
  const latest = schedule.latestAtOrBefore(nowMs);
  if (latest === null || latest <= cursorMs) return { skipped: 0, cursorMs };
  const older = schedule.countBetween(cursorMs, latest);
  if (armedMs === latest) return { run: { slotMs: latest, late: false }, skipped: older, cursorMs: latest };
  if (policy === 'latest') {
    const before = schedule.previous(latest);
    const interval = before === null ? Infinity : latest - before;
    if (nowMs - latest < interval) return { run: { slotMs: latest, late: true }, skipped: older, cursorMs: latest };
  }
  return { skipped: older + 1, cursorMs: latest };
}
