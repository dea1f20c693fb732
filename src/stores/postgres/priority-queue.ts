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

  /** `waitLimitMs`: a statement that waits longer for a connection fails, as pg-pool's `connectionTimeoutMillis` would have it. */
  constructor(
    private readonly size: number,
    private readonly waitLimitMs = 0,
  ) {}

  /** run runs `task` once fewer than `size` statements are in flight; `timed` ones go first. */
  async run<T>(timed: boolean, task: () => Promise<T>): Promise<T> {
    if (this.running >= this.size) await this.wait(timed ? this.timed : this.other);
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

  private wait(line: (() => void)[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const go = () => {
        if (timer) clearTimeout(timer);
        resolve();
      };
      line.push(go);
      if (this.waitLimitMs > 0) {
        timer = setTimeout(() => {
          const i = line.indexOf(go);
          if (i >= 0) line.splice(i, 1);
          // The words of pg-pool's own error, so it is described as before (errors.ts).
          reject(new Error('timeout exceeded when trying to connect'));
        }, this.waitLimitMs);
        timer.unref?.();
      }
    });
  }
}
