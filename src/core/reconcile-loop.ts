import type { Clock, TimerHandle } from './clock.js';

/**
 * ReconcileLoop runs one step at a time for the elector: `kick` runs it now, or once more right
 * after the run in flight; `schedule(ms)` kicks after `ms`, replacing any earlier wake-up. Every
 * action of an elector is one such run, so its algorithm never has two runs interleaved. A run
 * that throws is handed to `onError`, which decides when to try again.
 */
export class ReconcileLoop {
  private timer?: TimerHandle;
  private rerun = false;
  /** The run in flight, if any. */
  inFlight?: Promise<void>;

  constructor(
    private readonly clock: Clock,
    /** Whether runs may start (false once the elector stops). */
    private readonly active: () => boolean,
    private readonly step: () => Promise<void>,
    private readonly onError: (err: unknown) => void,
  ) {}

  kick(): void {
    if (!this.active()) return;
    if (this.inFlight) {
      this.rerun = true;
      return;
    }
    this.clear();
    this.inFlight = (async () => {
      try {
        do {
          this.rerun = false;
          await this.step().catch((err) => this.onError(err));
        } while (this.rerun && this.active());
      } finally {
        this.inFlight = undefined;
      }
    })();
  }

  /** again runs the step once more after the one in flight, without waiting. */
  again(): void {
    this.rerun = true;
  }

  schedule(ms: number): void {
    if (!this.active()) return;
    this.clear();
    this.timer = this.clock.setTimer(() => {
      this.timer = undefined;
      this.kick();
    }, Math.max(0, ms));
  }

  clear(): void {
    if (this.timer) this.clock.clearTimer(this.timer);
    this.timer = undefined;
  }
}
