import type { Redis } from 'ioredis';
import type { LeaseRecord, WatchListener } from '../../core/store.js';
import { MessageDecoder } from './codec.js';

/**
 * SUBSCRIBER_KEEPALIVE_MS is the TCP keepalive delay of the subscriber connection: a quiet
 * connection that died silently is found about 10 s after it (see RedisWatcher).
 */
export const SUBSCRIBER_KEEPALIVE_MS = 5_000;

/** ExpiryEvents says whether the server publishes `expired` keyspace events (best effort). */
export type ExpiryEvents = 'enabled' | 'disabled' | 'unknown';

/** WatcherDeps is what RedisWatcher needs from its store. */
export interface WatcherDeps {
  /** Opens the subscriber connection (a `duplicate()` of the store's client). */
  connect(): Redis;
  /** The per-lock channel WRITE_LUA publishes on. */
  channelOf(lock: string): string;
  /** The lock whose lease key this is, or undefined for other keys. */
  lockOfLeaseKey(key: string): string | undefined;
  /** `__keyevent@<db>__:expired`. */
  expiredChannel: string;
  /** Reads `notify-keyspace-events` (on the command connection); undefined if not allowed. */
  readNotifyConfig(): Promise<string | undefined>;
}

/**
 * RedisWatcher delivers lease changes to watchers over one subscriber connection per store:
 *
 * - the per-lock channel carries every acquisition, holder change, step-down flag and release,
 *   with the new record (or null), so a listener needs no read;
 * - `__keyevent@<db>__:expired` names lease keys the server expired, reported as null. It is
 *   subscribed unless `CONFIG GET notify-keyspace-events` shows expired events are off; only
 *   when it shows them on (`expiryEvents` 'enabled') do standbys rely on it alone and send
 *   nothing while they wait; otherwise they read again at the expiry they computed.
 *
 * Nothing is lost on a live connection: Redis writes each message to the subscriber's socket
 * or, past its output-buffer limit, closes the connection. A connection that dies without a
 * word (a crashed host, a dropped NAT entry) is found by TCP keepalive — probes answered by the
 * server's kernel, never by Redis — after SUBSCRIBER_KEEPALIVE_MS of silence plus ten probes
 * a second apart (libuv's settings), and then counts as dropped.
 *
 * When the connection drops every listener is called with `undefined` and `live` turns false
 * (standbys poll meanwhile); after the reconnect every channel is subscribed again and every
 * listener is called with `undefined` once more: anything may have happened while we were deaf.
 */
export class RedisWatcher {
  private sub?: Redis;
  private readonly listeners = new Map<string, Set<WatchListener>>();
  /** Per watched channel, its lock's decoder (which keeps the last record, see MessageDecoder). */
  private readonly decoders = new Map<string, MessageDecoder>();
  private everReady = false;
  private subscribed = false;
  /** SUBSCRIBE commands sent for new channels and not answered yet. */
  private pending = 0;
  private closed = false;
  private retryTimer?: NodeJS.Timeout;
  /** What the last check of `notify-keyspace-events` found. */
  expiryEvents: ExpiryEvents = 'unknown';
  /** The last error the subscriber connection reported, for diagnostics. */
  lastError?: Error;

  constructor(private readonly deps: WatcherDeps) {}

  watch(lock: string, listener: WatchListener): () => void {
    let set = this.listeners.get(lock);
    if (!set) {
      this.listeners.set(lock, (set = new Set()));
      const channel = this.deps.channelOf(lock);
      this.decoders.set(channel, new MessageDecoder(lock));
      const sub = this.subscriber();
      // Not ready yet: onReady subscribes every channel once the connection is up. Until the
      // server confirms, `live` is false: a read made meanwhile may come before the subscription.
      if (sub.status === 'ready') {
        this.pending++;
        sub
          .subscribe(channel)
          .catch((err) => this.onSubscribeFailure(err))
          .finally(() => this.pending--);
      }
    }
    set.add(listener);
    let active = true;
    return () => {
      if (!active) return;
      active = false;
      this.unwatch(lock, listener);
    };
  }

  /**
   * live tells whether the subscriber connection is up and every channel's subscription confirmed
   * (LeaseStore.watchLive).
   */
  get live(): boolean {
    return this.subscribed && this.pending === 0 && !this.closed;
  }

  /** Number of locks being watched (for tests and diagnostics). */
  get size(): number {
    return this.listeners.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.listeners.clear();
    this.decoders.clear();
    const sub = this.sub;
    this.sub = undefined;
    sub?.disconnect();
  }

  private unwatch(lock: string, listener: WatchListener): void {
    const set = this.listeners.get(lock);
    if (!set) return;
    set.delete(listener);
    if (set.size > 0) return;
    this.listeners.delete(lock);
    const channel = this.deps.channelOf(lock);
    this.decoders.delete(channel);
    if (this.sub?.status === 'ready') this.sub.unsubscribe(channel).catch(() => {});
  }

  private subscriber(): Redis {
    if (this.sub) return this.sub;
    const sub = this.deps.connect();
    // The 'error' event must always have a listener: ioredis would print it otherwise.
    sub.on('error', (err: Error) => {
      this.lastError = err;
    });
    sub.on('ready', () => void this.onReady(sub));
    // Deaf until the next 'ready' has subscribed again: wake every listener so standbys poll.
    sub.on('close', () => {
      if (!this.subscribed || sub !== this.sub) return;
      this.subscribed = false;
      for (const lock of [...this.listeners.keys()]) this.deliver(lock, undefined);
    });
    sub.on('message', (channel: string, message: string) => this.onMessage(channel, message));
    this.sub = sub;
    return sub;
  }

  /** Subscribes every channel on a fresh connection; after a reconnect, tells every listener. */
  private async onReady(sub: Redis): Promise<void> {
    clearTimeout(this.retryTimer);
    const reconnected = this.everReady;
    try {
      const flags = await this.deps.readNotifyConfig().catch(() => undefined);
      this.expiryEvents = flags === undefined ? 'unknown' : /E/.test(flags) && /[xA]/.test(flags) ? 'enabled' : 'disabled';
      const channels = [...this.decoders.keys()];
      if (this.expiryEvents !== 'disabled') channels.push(this.deps.expiredChannel);
      if (this.closed || sub !== this.sub) return;
      if (channels.length > 0) await sub.subscribe(...channels);
    } catch (err) {
      this.lastError = err as Error;
      // Still connected but the subscription failed (e.g. it timed out): try again shortly.
      if (!this.closed && sub === this.sub) {
        this.retryTimer = setTimeout(() => sub.status === 'ready' && void this.onReady(sub), 500);
        this.retryTimer.unref();
      }
      return;
    }
    this.everReady = true;
    this.subscribed = true;
    if (reconnected) for (const lock of [...this.listeners.keys()]) this.deliver(lock, undefined);
  }

  private onSubscribeFailure(err: unknown): void {
    // The connection is going down; its 'ready' after the reconnect subscribes everything.
    this.lastError = err as Error;
  }

  private onMessage(channel: string, message: string): void {
    if (this.closed) return;
    if (channel === this.deps.expiredChannel) {
      const lock = this.deps.lockOfLeaseKey(message);
      if (lock !== undefined && this.listeners.has(lock)) this.deliver(lock, null);
      return;
    }
    const decoder = this.decoders.get(channel);
    if (decoder) this.deliver(decoder.lock, decoder.decode(message));
  }

  private deliver(lock: string, record: LeaseRecord | null | undefined): void {
    const set = this.listeners.get(lock);
    if (!set) return;
    // Listeners are called now and may watch or unwatch meanwhile: call the ones there were.
    // Most locks have one (no copy then).
    const listeners = set.size === 1 ? set.values().next().value! : [...set];
    if (typeof listeners === 'function') return call(listeners, record);
    for (const listener of listeners) call(listener, record);
  }
}

function call(listener: WatchListener, record: LeaseRecord | null | undefined): void {
  try {
    listener(record);
  } catch {
    // Listeners must not throw; one that does must not silence the others.
  }
}
