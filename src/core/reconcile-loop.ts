import type { Clock, TimerHandle } from './clock.js';
import { sharedTimers, type SharedTimers } from './shared-timers.js';

/**
 * ReconcileLoop runs one step at a time for the elector: `kick` runs it now, or once more right
 * after the run in flight; `schedule(ms)` kicks after `ms` and `scheduleAt(atMs)` at a monotonic
 * instant (on a timer shared with every loop waiting for that instant), each replacing any
 * earlier wake-up. Every action of an elector is one such run, so its algorithm never has two
 * runs interleaved. A run that throws is handed to `onError`, which decides when to try again.
 */
export class ReconcileLoop {
  private timer?: TimerHandle;
  /** The shared instant this loop waits for, if it waits on one. */
  private sharedAtMs?: number;
  private readonly shared: SharedTimers;
  /** The callback every wake-up of this loop uses, made once (in the constructor: see there). */
  private readonly wake: () => void;
  private rerun = false;
  /** The run in flight, if any. */
  inFlight?: Promise<void>;

  constructor(
    private readonly clock: Clock,
    /** Whether runs may start (false once the elector stops). */
    private readonly active: () => boolean,
    private readonly step: () => Promise<void>,
    private readonly onError: (err: unknown) => void,
  ) {
    this.shared = sharedTimers(clock);
    // Assigned here rather than as a class field: a field's arrow function is named, and a
    // transpiler that keeps names (tsx, esbuild) gives each one a property table (~250 bytes,
    // 2.5 MB over 10,000 electors).
    this.wake = () => {
      this.timer = undefined;
      this.sharedAtMs = undefined;
      this.kick();
    };
  }

  kick(): void {
    if (!this.active()) return;
    if (this.inFlight) {
      this.rerun = true;
      return;
    }
    this.clear();
    this.inFlight = this.run();
  }

  /** again runs the step once more after the one in flight, without waiting. */
  again(): void {
    this.rerun = true;
  }

  schedule(ms: number): void {
    if (!this.active()) return;
    this.clear();
    this.timer = this.clock.setTimer(this.wake, Math.max(0, ms));
  }

  /** scheduleAt kicks once the monotonic clock reads `atMs`, on the timer shared for that instant. */
  scheduleAt(atMs: number): void {
    if (!this.active()) return;
    this.clear();
    this.sharedAtMs = atMs;
    this.shared.add(atMs, this.wake);
  }

  clear(): void {
    if (this.timer) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    if (this.sharedAtMs !== undefined) this.shared.remove(this.sharedAtMs, this.wake);
    this.sharedAtMs = undefined;
  }

  private async run(): Promise<void> {
    try {
      do {
        this.rerun = false;
        try {
          await this.step();
        } catch (err) {
          this.onError(err);
        }
      } while (this.rerun && this.active());
    } finally {
      this.inFlight = undefined;
    }
  }
}
