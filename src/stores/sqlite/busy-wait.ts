/**
 * WriteQueue runs one SQLite handle's write transactions without freezing the process while
 * another process holds the database, and commits the ones that piled up meanwhile together.
 *
 * The drivers are synchronous, and so is SQLite's own busy handler: with a busy timeout of 1 s,
 * a write that finds the database locked blocks the whole event loop for up to a second, and
 * each further write queued behind it blocks again. While a process is frozen like that, none
 * of its other leases is renewed and no timer fires; once the lock is freed, the frozen process
 * is the slowest to notice (past its first few hundred milliseconds of waiting SQLite retries
 * only every 100 ms, losing the lock to processes that just started asking), and then it commits
 * its backlog one transaction — one fsync, with synchronous=FULL — at a time. Measured in the
 * shard chaos runs (finding 6 in docs/RELIABILITY.md): writes that had waited through a database
 * lock got it a median 88 ms and up to 486 ms after it was freed; some waited out their whole
 * second and failed although the database had been free for most of it, and every lease of that
 * process lapsed meanwhile.
 *
 * So SQLite's own busy timeout is only a slice (BUSY_SLICE_MS, for the ordinary case: another
 * process's transaction of a few milliseconds), and the rest of the wait happens here, between
 * attempts, with the event loop free:
 *
 * - Write transactions of one handle run in the order they were asked for; with nothing waiting,
 *   at once, as before. When the database is locked, the queue tries again after a short pause,
 *   and when it gets the lock it runs everything that is waiting inside one transaction, each
 *   under a savepoint of its own: one commit instead of one per write, and each write's effect
 *   exactly what it would have been alone, in order (one that throws is rolled back alone).
 * - Each write gives up, with the busy error as before, once it has waited `timeoutMs` since it
 *   was asked for — not since the writes ahead of it finished.
 * - Reads do not queue behind writes (a WAL reader is not blocked by a writer); a read answered
 *   busy (rare: another connection recovering the WAL) is tried again the same way.
 *
 * A transaction that throws has been rolled back by the driver, so trying it again is safe.
 */
import type { SqlDatabase } from './driver.js';

/** BUSY_SLICE_MS is the busy timeout given to SQLite itself: the longest one attempt blocks. */
export const BUSY_SLICE_MS = 10;
/** Pause between attempts while the database stays locked (with jitter up to twice as long). */
const PAUSE_MS = 4;

interface Pending {
  body: () => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  deadlineMs: number;
}

type Outcome = { ok: true; value: unknown } | { ok: false; err: unknown };

/** WriteQueue: see the file comment. */
export class WriteQueue {
  private readonly queue: Pending[] = [];
  private timer?: NodeJS.Timeout;
  private closedError?: () => Error;

  constructor(
    private readonly db: Pick<SqlDatabase, 'exec' | 'immediate'>,
    private readonly timeoutMs: number,
    private readonly isBusy: (err: unknown) => boolean,
  ) {}

  /** write runs `body` in a write transaction, after the writes asked for before it. */
  write<T>(body: () => T): Promise<T> {
    if (this.closedError) return Promise.reject(this.closedError());
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ body, resolve: resolve as (v: unknown) => void, reject, deadlineMs: performance.now() + this.timeoutMs });
      if (this.queue.length === 1) this.drain();
    });
  }

  /** read runs `fn`, trying again while the database answers busy, for up to `timeoutMs`. */
  async read<T>(fn: () => T): Promise<T> {
    const deadlineMs = performance.now() + this.timeoutMs;
    for (;;) {
      if (this.closedError) throw this.closedError();
      try {
        return fn();
      } catch (err) {
        if (!this.isBusy(err) || performance.now() >= deadlineMs) throw err;
      }
      await new Promise((resolve) => setTimeout(resolve, pause()));
    }
  }

  /** close fails every write still waiting with `error()`, and any asked for later. */
  close(error: () => Error): void {
    this.closedError = error;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const p of this.queue.splice(0)) p.reject(error());
  }

  /** drain commits everything waiting in one transaction, or, if the database is locked, waits on. */
  private drain(): void {
    this.timer = undefined;
    while (this.queue.length > 0) {
      const batch = this.queue.slice();
      let outcomes: Outcome[];
      try {
        outcomes = this.db.immediate(() => (batch.length === 1 ? [{ ok: true as const, value: batch[0]!.body() }] : batch.map((p) => this.isolated(p.body))));
      } catch (err) {
        if (this.isBusy(err)) return this.waitForLock(err);
        // Not a lock: the transaction failed as a whole (a single write that threw, or the commit).
        outcomes = batch.map(() => ({ ok: false, err }));
      }
      this.queue.splice(0, batch.length);
      batch.forEach((p, i) => {
        const o = outcomes[i]!;
        if (o.ok) p.resolve(o.value);
        else p.reject(o.err);
      });
    }
  }

  /** isolated runs one write of a batch under its own savepoint, so a write that throws undoes only itself. */
  private isolated(body: () => unknown): Outcome {
    this.db.exec('SAVEPOINT baton_write');
    try {
      const value = body();
      this.db.exec('RELEASE baton_write');
      return { ok: true, value };
    } catch (err) {
      this.db.exec('ROLLBACK TO baton_write');
      this.db.exec('RELEASE baton_write');
      return { ok: false, err };
    }
  }

  /** waitForLock fails the writes that have waited their whole timeout and tries the rest again soon. */
  private waitForLock(busy: unknown): void {
    const now = performance.now();
    for (let i = this.queue.length - 1; i >= 0; i--) {
      const p = this.queue[i]!;
      if (now >= p.deadlineMs) {
        this.queue.splice(i, 1);
        p.reject(busy);
      }
    }
    if (this.queue.length > 0) this.timer = setTimeout(() => this.drain(), pause());
  }
}

function pause(): number {
  return PAUSE_MS * (1 + Math.random());
}
