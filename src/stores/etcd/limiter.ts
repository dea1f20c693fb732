/**
 * Limiter runs at most `limit` tasks at once and starts the others in arrival order as slots
 * free up.
 *
 * Every etcd call carries its own deadline from when it is made. Thousands made in the same
 * moment — every lock watch of a handle reading again after its watch stream broke — share
 * one connection and one client, and most of them pass their deadline before they are even
 * sent; each failure is retried, and the handle never gets out of it. Queued here, a call's
 * deadline starts when it leaves the queue.
 */
export class Limiter {
  private running = 0;
  /** Tasks waiting for a slot; those before `head` have started (compacted now and then). */
  private waiting: (() => void)[] = [];
  private head = 0;

  constructor(private readonly limit: number) {}

  run<T>(task: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const start = () => {
        this.running++;
        let p: Promise<T>;
        try {
          p = task();
        } catch (err) {
          p = Promise.reject(err);
        }
        p.then(resolve, reject).finally(() => {
          this.running--;
          this.next();
        });
      };
      if (this.running < this.limit) start();
      else this.waiting.push(start);
    });
  }

  private next(): void {
    if (this.head >= this.waiting.length) return;
    const start = this.waiting[this.head++]!;
    if (this.head === this.waiting.length) {
      this.waiting = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.head);
      this.head = 0;
    }
    start();
  }
}
