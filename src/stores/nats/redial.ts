/**
 * RedialPacer paces the nats client's reconnect loop on the monotonic clock.
 *
 * The client (nats 2.x) spaces its dials by comparing `Date.now()` with the wall time of its
 * last dial. When the wall clock steps back after that dial (NTP, a VM resume, an operator),
 * the last dial seems to lie in the future and the loop only sleeps, dialing again once the
 * wall clock has caught up: a step back of an hour leaves the process disconnected for an hour
 * while the server answers. The client asks its `reconnectDelayHandler` for the wait before
 * each turn of that loop; this class is that handler, fed with the dials it sees.
 *
 * - Every dial starts with a `reconnecting` status event; the backend reports it (`dialed`).
 * - While less than wait + jitter has passed since the last dial on the monotonic clock, it
 *   answers the wait plus jitter, as the client's own handler would.
 * - Once that much has passed it answers -Infinity, which passes the client's wall-clock test
 *   whatever the wall clock did: the client dials now. With a sane wall clock the client would
 *   have dialed at this turn anyway; after a step back it is what gets it dialing again. The
 *   dial stamps a fresh wall time, so the loop's own pacing is right again after it.
 * - An answer of -Infinity counts as a dial itself, so a server that refuses at once still sees
 *   one dial per wait, never a busy loop.
 */
export class RedialPacer {
  /** Monotonic time the last dial started; undefined before any was seen. */
  private lastDialAt?: number;

  constructor(
    private readonly waitMs: number,
    private readonly jitterMs: number,
    private readonly now: () => number = () => performance.now(),
    private readonly random: () => number = Math.random,
  ) {}

  /** delay is the client's `reconnectDelayHandler`: the wait before the next dial, in ms. */
  delay(): number {
    const now = this.now();
    if (this.lastDialAt === undefined || now - this.lastDialAt >= this.waitMs + this.jitterMs) {
      // The client dials at this turn for certain: count it now, in case its event comes late.
      this.lastDialAt = now;
      return Number.NEGATIVE_INFINITY;
    }
    return this.waitMs + Math.floor(this.random() * (this.jitterMs + 1));
  }

  /** dialed records that the client started a dial (its `reconnecting` status event). */
  dialed(): void {
    this.lastDialAt = this.now();
  }
}
