import type { Clock, TimerHandle } from './clock.js';

/**
 * SharedTimers runs callbacks at monotonic instants with one clock timer per distinct instant,
 * however many callbacks wait for it. Renewals fall on a grid (many-leases.ts), so the 10,000
 * leaders of a process wait for the same instant: one timer, not 10,000 created and cancelled
 * every period. Callbacks run in the order they were added, in one turn of the event loop.
 */
export class SharedTimers {
  private readonly slots = new Map<number, { fns: Set<() => void>; handle: TimerHandle }>();

  constructor(private readonly clock: Clock) {}

  /** add runs `fn` once the monotonic clock reads `atMs` (at once if it already does). */
  add(atMs: number, fn: () => void): void {
    let slot = this.slots.get(atMs);
    if (!slot) {
      const fns = new Set<() => void>();
      slot = { fns, handle: this.clock.setTimer(() => this.fire(atMs, fns), atMs - this.clock.monotonicMs()) };
      this.slots.set(atMs, slot);
    }
    slot.fns.add(fn);
  }

  /** remove cancels `fn` at `atMs`; the clock timer goes with the last callback waiting on it. */
  remove(atMs: number, fn: () => void): void {
    const slot = this.slots.get(atMs);
    if (!slot || !slot.fns.delete(fn) || slot.fns.size > 0) return;
    this.clock.clearTimer(slot.handle);
    this.slots.delete(atMs);
  }

  private fire(atMs: number, fns: Set<() => void>): void {
    if (this.slots.get(atMs)?.fns === fns) this.slots.delete(atMs);
    let failure: { err: unknown } | undefined;
    for (const fn of fns) {
      // One callback that throws (a listener of `stopped`) must not keep the others from running:
      // they may be deadlines. The first error is thrown afterwards, as a timer's own would be.
      try {
        fn();
      } catch (err) {
        failure ??= { err };
      }
    }
    if (failure) throw failure.err;
  }
}

const perClock = new WeakMap<Clock, SharedTimers>();

/** sharedTimers is the one SharedTimers of `clock`, shared by every elector that uses it. */
export function sharedTimers(clock: Clock): SharedTimers {
  let t = perClock.get(clock);
  if (!t) perClock.set(clock, (t = new SharedTimers(clock)));
  return t;
}
