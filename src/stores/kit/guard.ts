/** ClosedGuard makes a store's handle refuse calls after `close()` (StoreClosedError). */
import { StoreClosedError } from '../../core/errors.js';

/** ClosedGuard tracks whether a handle is closed; `check()` throws once it is. */
export class ClosedGuard {
  private isClosed = false;
  constructor(private readonly store: string) {}
  /** closed tells whether `close()` has run. */
  get closed(): boolean {
    return this.isClosed;
  }
  /** close marks the handle closed; returns false if it already was (close is idempotent). */
  close(): boolean {
    if (this.isClosed) return false;
    this.isClosed = true;
    return true;
  }
  /** check throws StoreClosedError on a closed handle. */
  check(): void {
    if (this.isClosed) throw new StoreClosedError(this.store);
  }
}
