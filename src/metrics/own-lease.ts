/**
 * How stale is this candidate's own lease? The elector steps down on its own deadline, so a
 * leader that cannot reach the store stops *being* leader quickly — but its record still names
 * it until someone takes over or the store comes back. Health checks and metrics both want the
 * same answer to "how long since I last confirmed the lease that still bears my name?".
 */
import { realClock, type Clock } from '../core/clock.js';
import type { LeaderElector } from '../core/elector.js';

/**
 * OwnLeaseWatch tracks when this candidate last confirmed its lease in the store: the start of
 * its last successful acquisition or renewal (the same instant the elector times its deadline
 * from). Timed on `clock`, which must be the elector's clock (real by default).
 */
export class OwnLeaseWatch {
  private confirmed?: { term: number; atMs: number };
  private readonly onWrite = () => {
    const w = this.elector.leadershipWindow();
    if (w) this.confirmed = { term: w.term, atMs: w.renewStartMs };
  };

  constructor(
    private readonly elector: LeaderElector,
    private readonly clock: Clock = realClock,
  ) {
    elector.on('elected', this.onWrite);
    elector.on('renewed', this.onWrite);
    this.onWrite();
  }

  /**
   * ageMs is how long ago the lease was last confirmed, while the record this candidate last
   * saw still names it (leading, or stepped down but not yet superseded); undefined otherwise.
   */
  ageMs(): number | undefined {
    const now = this.clock.monotonicMs();
    const w = this.elector.leadershipWindow();
    if (w) return now - w.renewStartMs;
    const seen = this.elector.leader();
    const c = this.confirmed;
    if (!c || !seen || seen.holder !== this.elector.identity || seen.term !== c.term) return undefined;
    return now - c.atMs;
  }

  /** close stops listening to the elector. */
  close(): void {
    this.elector.off('elected', this.onWrite);
    this.elector.off('renewed', this.onWrite);
  }
}
