/**
 * StatementQueue keeps at most `size` statements in flight on the pool and orders the rest, the
 * statements whose caller's deadline is already running first.
 *
 * Why: node-postgres answers one statement per connection at a time and its pool queues the rest
 * first come, first served. A shard group member that is handed fifty shards puts their reads,
 * acquisitions and releases in that queue, and the one statement that renews every lease it
 * already holds waited behind them: measured under load (20 members on a busy 2-core machine),
 * the pool queue was 57 deep, a statement took a second on average and up to 6 s, renewals
 * missed their 3 s deadline, every lease of a member was lost at once, the releases that followed
 * filled the queue again, and a 1,000-shard group took minutes to settle. Writes that an elector
 * times from their call (renewals, acquisitions) now go ahead of reads, releases and ledger
 * calls, so they wait for at most the statements already running.
 */
export class StatementQueue {
  private running = 0;
  private readonly timed: (() => void)[] = [];
  private readonly other: (() => void)[] = [];

  constructor(private readonly size: number) {}

  /** waiting is how many statements wait for a connection (for tests and diagnostics). */
  get waiting(): number {
    return this.timed.length + this.other.length;
  }

  /** run runs `task` once fewer than `size` statements are in flight; `timed` ones go first. */
  async run<T>(timed: boolean, task: () => Promise<T>): Promise<T> {
    if (this.running >= this.size) await new Promise<void>((resolve) => (timed ? this.timed : this.other).push(resolve));
    else this.running++;
    try {
      return await task();
    } finally {
      // The slot passes straight to the next waiter, so `running` stays as it is.
      const next = this.timed.shift() ?? this.other.shift();
      if (next) next();
      else this.running--;
    }
  }
}
