import type { Clock, TimerHandle } from './clock.js';
import { sharedTimers, type SharedTimers } from './shared-timers.js';

/**
 * STEP_PENDING is what a step returns when it finishes later by calling the loop's `stepDone`
 * or `stepFailed` itself, instead of returning a promise. A leader's renewal is such a step: with
 * 10,000 leases held, a promise and async frame per renewal, alive while the batch is out, is
 * most of what the garbage collector copies (docs/history/performance.md).
 */
export const STEP_PENDING: unique symbol = Symbol('step pending');

/** StepOutcome is what a step returns: nothing (done), a promise (done when it settles), or STEP_PENDING. */
export type StepOutcome = void | Promise<void> | typeof STEP_PENDING;

/**
 * ReconcileLoop runs one step at a time for the elector: `kick` runs it now, or once more right
 * after the run in flight; `schedule(ms)` kicks after `ms` and `scheduleAt(atMs)` at a monotonic
 * instant (on a timer shared with every loop waiting for that instant), each replacing any
 * earlier wake-up. Every action of an elector is one such run, so its algorithm never has two
 * runs interleaved. A step that throws or rejects is handed to `onError`, which decides when to
 * try again.
 */
export class ReconcileLoop {
  private timer?: TimerHandle;
  /** The shared instant this loop waits for, if it waits on one. */
  private sharedAtMs?: number;
  private readonly shared: SharedTimers;
  /** The callback every wake-up of this loop uses, made once (in the constructor: see there). */
  private readonly wake: () => void;
  private rerun = false;
  /** Whether a step is running (or pending). */
  private busy = false;
  /** Made only when someone waits for the loop to go idle (stop()). */
  private idle?: { promise: Promise<void>; resolve: () => void };
  /** stepDone ends the step that returned STEP_PENDING (then runs it again if it was kicked meanwhile). */
  readonly stepDone: () => void;
  /** stepFailed ends that step with an error, handed to `onError`. */
  readonly stepFailed: (err: unknown) => void;

  constructor(
    private readonly clock: Clock,
    /** Whether runs may start (false once the elector stops). */
    private readonly active: () => boolean,
    private readonly step: () => StepOutcome,
    private readonly onError: (err: unknown) => void,
  ) {
    this.shared = sharedTimers(clock);
    // Assigned here rather than as class fields: a field's arrow function is named, and a
    // transpiler that keeps names (tsx, esbuild) gives each one a property table (~250 bytes,
    // 2.5 MB over 10,000 electors).
    this.wake = () => {
      this.timer = undefined;
      this.sharedAtMs = undefined;
      this.kick();
    };
    this.stepDone = () => {
      if (this.rerun && this.active()) return this.runStep();
      this.busy = false;
      this.rerun = false;
      const idle = this.idle;
      this.idle = undefined;
      idle?.resolve();
    };
    this.stepFailed = (err) => {
      try {
        this.onError(err);
      } finally {
        this.stepDone();
      }
    };
  }

  /** inFlight settles once the run in flight (with its reruns) is over; undefined when idle. */
  get inFlight(): Promise<void> | undefined {
    if (!this.busy) return undefined;
    if (!this.idle) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.idle = { promise, resolve };
    }
    return this.idle.promise;
  }

  kick(): void {
    if (!this.active()) return;
    if (this.busy) {
      this.rerun = true;
      return;
    }
    this.clear();
    this.runStep();
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

  private runStep(): void {
    this.busy = true;
    this.rerun = false;
    let outcome: StepOutcome;
    try {
      outcome = this.step();
    } catch (err) {
      return this.stepFailed(err);
    }
    if (outcome === STEP_PENDING) return;
    if (outcome) outcome.then(this.stepDone, this.stepFailed);
    else this.stepDone();
  }
}
