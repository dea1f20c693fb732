import type { Clock, TimerHandle } from '../core/clock.js';

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * FakeClock is a Clock whose time moves only when told. `advance(ms)` fires due timers in
 * order, letting promise callbacks settle between them, so elector tests are exact and fast.
 */
export class FakeClock implements Clock {
  private now = 0;
  private wall: number;
  private seq = 0;
  private readonly timers = new Set<Timer>();

  constructor(wallStartMs = Date.UTC(2026, 0, 1)) {
    this.wall = wallStartMs;
  }

  monotonicMs(): number {
    return this.now;
  }

  wallMs(): number {
    return this.wall + this.now;
  }

  /** jumpWall moves only the wall clock (as an NTP step or a bad admin would). */
  jumpWall(deltaMs: number): void {
    this.wall += deltaMs;
  }

  setTimer(fn: () => void, ms: number): TimerHandle {
    const t: Timer = { at: this.now + Math.max(0, ms), seq: this.seq++, fn };
    this.timers.add(t);
    return t;
  }

  clearTimer(handle: TimerHandle): void {
    this.timers.delete(handle as Timer);
  }

  /** pendingTimers is the number of armed timers. */
  get pendingTimers(): number {
    return this.timers.size;
  }

  /** advance moves time forward by `ms`, firing each due timer and settling promises after it. */
  async advance(ms: number): Promise<void> {
    const target = this.now + ms;
    await settle();
    for (;;) {
      let next: Timer | undefined;
      for (const t of this.timers) if (t.at <= target && (!next || t.at < next.at || (t.at === next.at && t.seq < next.seq))) next = t;
      if (!next) break;
      this.timers.delete(next);
      this.now = Math.max(this.now, next.at);
      next.fn();
      await settle();
    }
    this.now = target;
    await settle();
  }
}

/** settle lets pending promise callbacks and immediates run. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
}
