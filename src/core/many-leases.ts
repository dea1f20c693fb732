import type { Clock, TimerHandle } from './clock.js';
import { batcherFor, type PendingRenewal, type RenewalAnswer } from './batcher.js';
import { sharedTimers, type SharedTimers } from './shared-timers.js';
import type { LeaseRecord, LeaseStore } from './store.js';

/**
 * The elector's speed-ups for a process that holds many leases (the bench holds 10,000 through
 * one store). None of them is a safety rule — the elector (elector.ts) decides when a leader
 * renews and when it stops; these only make holding thousands of leases cheap:
 *
 * - renewals come due on a grid shared by every elector of the process, so they fall in the
 *   same turn of the event loop and the batcher (batcher.ts) sends them in one round trip;
 * - each leadership has one deadline timer, re-armed lazily instead of replaced on every
 *   renewal (10,000 leases would otherwise churn 10,000 timers per period);
 * - renewal and deadline wake-ups that fall on the same instant share one clock timer
 *   (shared-timers.ts), so 10,000 leaders wait on a handful of timers, not 20,000;
 * - a batch goes to the store as revisions only when it can take them (`renewRevisions`);
 * - a renewal is one object (batcher.ts's PendingRenewal) answered through a callback each
 *   elector makes once: no promise or async frame per renewal, which with 10,000 leases all
 *   out at once were most of what the garbage collector had to copy.
 */

/**
 * renewalDueMs is when a renewal that follows a write started at `startMs` is due: the next
 * whole multiple of `periodMs` on the monotonic clock. After an acquisition the first renewal
 * may so come early (never sooner than an eighth of a period) or up to an eighth late; from
 * then on renewals are one period apart.
 */
export function renewalDueMs(startMs: number, periodMs: number): number {
  let due = Math.floor((startMs + periodMs) / periodMs) * periodMs;
  if (due - startMs < periodMs / 8) due += periodMs;
  return due;
}

/**
 * DEADLINE_GRID_MS: deadline timers wake on this grid, rounded down. Leaderships renewed in one
 * batch have deadlines microseconds apart; rounded, they share one timer (SharedTimers). Waking
 * early is safe: the deadline is read again, and the last stretch is timed exactly.
 */
const DEADLINE_GRID_MS = 16;

/**
 * DeadlineTimer calls `onPassed` once the deadline `deadlineMs()` reads has passed. A renewal
 * only ever moves the deadline later, so the timer is armed once and, when it fires before
 * the deadline it now reads, re-armed for the rest. It wakes on a shared timer at the grid
 * instant before the deadline, then, within a grid step of it, on an exact timer of its own.
 */
export class DeadlineTimer {
  private handle?: TimerHandle;
  private sharedAtMs?: number;
  private readonly shared: SharedTimers;
  private readonly wake: () => void;

  constructor(
    private readonly clock: Clock,
    private readonly deadlineMs: () => number,
    private readonly onPassed: () => void,
  ) {
    this.shared = sharedTimers(clock);
    // Not a class field (see ReconcileLoop's `wake`).
    this.wake = () => {
      this.handle = undefined;
      this.sharedAtMs = undefined;
      if (this.clock.monotonicMs() < this.deadlineMs()) return this.arm();
      this.onPassed();
    };
  }

  arm(): void {
    if (this.handle || this.sharedAtMs !== undefined) return;
    const deadline = this.deadlineMs();
    const atMs = Math.floor(deadline / DEADLINE_GRID_MS) * DEADLINE_GRID_MS;
    if (atMs > this.clock.monotonicMs()) {
      this.sharedAtMs = atMs;
      this.shared.add(atMs, this.wake);
    } else {
      this.handle = this.clock.setTimer(this.wake, deadline - this.clock.monotonicMs());
    }
  }

  clear(): void {
    if (this.handle) this.clock.clearTimer(this.handle);
    this.handle = undefined;
    if (this.sharedAtMs !== undefined) this.shared.remove(this.sharedAtMs, this.wake);
    this.sharedAtMs = undefined;
  }
}

/**
 * sendRenewal hands a renewal of `l.record` to the store's shared batcher, sent now (its
 * deadline counts from this instant), and keeps it as `l.renewal`. It has no timer and no
 * promise of its own: the answer goes to `answer`, and the leadership's deadline timer cancels a
 * renewal still waiting on the store (`l.renewal.reject`), so none holds an elector past its
 * deadline.
 */
export function sendRenewal(store: LeaseStore, lock: string, l: { readonly record: LeaseRecord; renewal?: PendingRenewal }, clock: Clock, answer: RenewalAnswer): void {
  l.renewal = batcherFor(store).renew(lock, l.record, clock.wallMs(), clock.monotonicMs(), answer);
}
