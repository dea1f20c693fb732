import type { Redis } from 'ioredis';
import { BatonError, StoreClosedError, StoreUnavailableError, errorMessage } from '../../core/errors.js';

/**
 * BoundedCalls runs every operation of a RedisStore within its timeout, whatever the client's
 * own settings: it waits (at most that long) for the connection to be ready — so nothing is
 * ever queued to be sent after the caller gave up — then races the call against the rest of
 * the time, and turns any failure into StoreUnavailableError naming the server and operation.
 */
export class BoundedCalls {
  /** The last error the connection reported (set by the store's 'error' listener). */
  lastError?: Error;
  private readyPromise?: Promise<void>;

  constructor(
    private readonly client: Redis,
    private readonly options: { label: string; timeoutMs: number; isClosed: () => boolean },
  ) {}

  async run<T>(what: string, fn: () => Promise<T>): Promise<T> {
    if (this.options.isClosed()) throw new StoreClosedError('redis');
    const { timeoutMs, label } = this.options;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(this.describeTimeout())), timeoutMs);
    });
    try {
      if (this.client.status !== 'ready') await Promise.race([this.whenReady(), timeout]);
      return await Promise.race([fn(), timeout]);
    } catch (err) {
      if (err instanceof BatonError) throw err;
      throw new StoreUnavailableError(`redis: ${label}: ${what}: ${errorMessage(err)}`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
  }

  private describeTimeout(): string {
    const ms = this.options.timeoutMs;
    if (this.client.status === 'ready') return `no answer within ${ms}ms`;
    const why = this.lastError ? ` (${errorMessage(this.lastError)})` : '';
    return `not connected within ${ms}ms${why}`;
  }

  /** whenReady resolves on the client's next 'ready': one listener however many calls wait. */
  private whenReady(): Promise<void> {
    if (this.client.status === 'end') return Promise.reject(new Error('the connection is closed'));
    if (this.client.status === 'wait') this.client.connect().catch(() => {}); // a lazyConnect client
    this.readyPromise ??= new Promise<void>((resolve) => {
      this.client.once('ready', () => {
        this.readyPromise = undefined;
        resolve();
      });
    });
    return this.readyPromise;
  }
}
