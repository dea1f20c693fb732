import type { Clock } from './clock.js';
import { LeaseLostError } from './errors.js';
import { DeadlineTimer } from './many-leases.js';
import type { LeaseRecord } from './store.js';
import type { PendingRenewal } from './batcher.js';

/**
 * Leadership is one term of leading: the record it holds, when its last successful write was
 * sent, its deadline (renewDeadline after that), and the signal its work runs under. The
 * elector (elector.ts) decides when it begins and ends; this only keeps its state.
 */
export class Leadership {
  readonly term: number;
  readonly controller = new AbortController();
  /** The renewal last sent (many-leases.ts's sendRenewal); the deadline rejects it if still unanswered. */
  renewal?: PendingRenewal;
  private readonly timer: DeadlineTimer;

  constructor(
    public record: LeaseRecord,
    /** Monotonic time at which the last successful write was sent. */
    public renewStartMs: number,
    private readonly renewDeadlineMs: number,
    clock: Clock,
    onDeadline: (l: Leadership) => void,
  ) {
    this.term = record.term;
    this.timer = new DeadlineTimer(clock, () => this.deadlineMs, () => onDeadline(this));
    this.timer.arm();
  }

  /** deadlineMs is the monotonic instant by which this leadership has ended. */
  get deadlineMs(): number {
    return this.renewStartMs + this.renewDeadlineMs;
  }

  /** end clears the deadline timer and aborts the signal with a LeaseLostError. */
  end(message: string): void {
    this.timer.clear();
    this.controller.abort(new LeaseLostError(message));
  }
}
