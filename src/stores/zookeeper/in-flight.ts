/**
 * InFlightCap lets at most `limit` requests be in the ZooKeeper client at once (handed to it and
 * not yet answered); the others wait their turn here, first come first served.
 *
 * Why: node-zookeeper-client writes every request it is given at once (or queues it behind the
 * socket's back pressure) and keeps the unsent ones across a reconnect. 10,000 calls made in one
 * turn (a renewal batch, a wave of campaigns, the lock watches re-arming after a reconnect) would
 * all be in the client, each timed from that moment, answered one after another: under load the
 * last ones outlive their deadline while the server is still busy answering the first. Behind the
 * cap a request is handed over only when the connection can take it, so its deadline counts from
 * when it goes out, and a request that waits here and is given up is never sent.
 */
export class InFlightCap {
  private active = 0;
  /** Bumped by reset: slots taken before it are not given back twice. */
  private epoch = 0;
  private readonly queue: (() => void)[] = [];
  private head = 0;

  constructor(readonly limit: number) {}

  /** inFlight is how many requests hold a slot now. */
  get inFlight(): number {
    return this.active;
  }

  /** waiting is how many calls wait for a slot. */
  get waiting(): number {
    return this.queue.length - this.head;
  }

  /** take resolves, in order of asking, once a slot is free; the function it gives frees it (once). */
  take(): Promise<() => void> {
    if (this.active < this.limit && this.waiting === 0) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve) => this.queue.push(() => resolve(this.releaser())));
  }

  /**
   * reset frees every slot: the client holding those requests was dropped (session expiry), so
   * their answers will never come. Waiting calls are let in up to the limit.
   */
  reset(): void {
    this.epoch++;
    this.active = 0;
    this.admit();
  }

  /** openAll lets every waiting call in (the session is closing: each finds it closed). */
  openAll(): void {
    while (this.waiting > 0) {
      this.active++;
      this.next()();
    }
  }

  private releaser(): () => void {
    const epoch = this.epoch;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (epoch !== this.epoch) return;
      this.active--;
      this.admit();
    };
  }

  private admit(): void {
    while (this.active < this.limit && this.waiting > 0) {
      this.active++;
      this.next()();
    }
  }

  private next(): () => void {
    const grant = this.queue[this.head]!;
    this.head++;
    // Drop the consumed front now and then, so a long queue is not copied on every turn.
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    return grant;
  }
}
