/**
 * KeyFeed: one ordered push consumer per key family (`lease.*`) per store handle, shared by every
 * watched key of that family and fanned out here. One consumer per lock would cost the server a
 * consumer, its idle heartbeats and flow control for each of thousands of locks; one per handle
 * costs one, at the price of hearing every write of the family (every lease renewal in the bucket).
 * Put unrelated fleets in separate buckets.
 *
 * The consumer starts with the last value of each key (DeliverLastPerSubject), so a watcher that
 * joins while it (re)starts hears the current record; a watcher that joins a running feed has
 * done or will do its own read. `live` is false until the consumer runs, and whenever it stops
 * without being asked (every listener is then woken once with `undefined` and it starts again).
 */
import type { KV, KvEntry, QueuedIterator } from 'nats';
import type { BackendItem } from '../kit/backend.js';
import { withTimeout } from '../kit/timeout.js';
import { fromNatsKey } from './keys.js';

/** How long a consumer that failed to start waits before the next try. */
const RETRY_MS = 500;

type Listener = (item: BackendItem | null | undefined) => void;

const decoder = new TextDecoder();

/** KeyFeed: see the file comment. */
export class KeyFeed {
  private readonly listeners = new Map<string, Set<Listener>>();
  private iter?: QueuedIterator<KvEntry>;
  private generation = 0;
  private running = false;
  /** A consumer is running, starting, or waiting to retry. */
  private active = false;
  private retry?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly kv: KV,
    private readonly filter: string,
    private readonly timeoutMs: number,
    private readonly canStart: () => boolean,
  ) {}

  /** live: the consumer is running (or nobody listens). */
  get live(): boolean {
    return this.running || this.listeners.size === 0;
  }

  /** add registers a listener for one NATS key; the first one starts the consumer. */
  add(natsKey: string, listener: Listener): () => void {
    let set = this.listeners.get(natsKey);
    if (!set) this.listeners.set(natsKey, (set = new Set()));
    set.add(listener);
    if (!this.active && this.canStart()) this.restart();
    return () => {
      set!.delete(listener);
      if (set!.size === 0 && this.listeners.get(natsKey) === set) this.listeners.delete(natsKey);
      if (this.listeners.size === 0) this.halt();
    };
  }

  /** down: the connection dropped; stop the consumer and wake every listener once. */
  down(): void {
    this.halt();
    this.wakeAll();
  }

  /** restart (re)creates the consumer, e.g. after a reconnect (the server may have lost it). */
  restart(): void {
    this.halt();
    if (this.listeners.size === 0 || this.stopped) return;
    this.active = true;
    void this.run(++this.generation);
  }

  /** close stops for good. */
  close(): void {
    this.stopped = true;
    this.halt();
    this.listeners.clear();
  }

  private halt(): void {
    this.generation++;
    clearTimeout(this.retry);
    this.retry = undefined;
    this.iter?.stop();
    this.iter = undefined;
    this.running = false;
    this.active = false;
  }

  private async run(generation: number): Promise<void> {
    const current = () => !this.stopped && this.generation === generation;
    let iter: QueuedIterator<KvEntry>;
    try {
      iter = await withTimeout('nats', 'watch', this.timeoutMs, this.kv.watch({ key: this.filter }));
    } catch {
      if (current() && this.canStart()) this.retry = setTimeout(() => current() && void this.run(generation), RETRY_MS);
      return;
    }
    if (!current()) {
      iter.stop();
      return;
    }
    this.iter = iter;
    this.running = true;
    try {
      for await (const entry of iter) {
        if (!current()) break;
        const set = this.listeners.get(entry.key);
        if (!set) continue;
        const item = entry.operation === 'PUT' ? { key: fromNatsKey(entry.key), value: decoder.decode(entry.value), version: String(entry.revision) } : null;
        for (const l of [...set]) l(item);
      }
    } catch {
      // the consumer failed: handled below like an end
    }
    if (!current()) return;
    // It ended without being asked (the server dropped it): wake everyone, start again.
    this.halt();
    this.wakeAll();
    this.active = true;
    const next = this.generation;
    this.retry = setTimeout(() => this.generation === next && this.canStart() && void this.run(++this.generation), RETRY_MS);
  }

  private wakeAll(): void {
    for (const set of [...this.listeners.values()]) for (const l of [...set]) l(undefined);
  }
}
