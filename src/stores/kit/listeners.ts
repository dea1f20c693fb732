/**
 * ListenerRegistry keeps a store's watch listeners per lock and subscribes to the backend once
 * per lock: the first listener of a lock starts the subscription, the last one to leave ends it.
 * Listeners never see a throw from one another, and nothing is delivered after `clear()`.
 */
import type { LeaseRecord, WatchListener } from '../../core/store.js';

/** Subscribe starts watching one lock and returns a function that stops it. */
export type Subscribe = (lock: string) => () => void;

/** ListenerRegistry: see the file comment. */
export class ListenerRegistry {
  private readonly byLock = new Map<string, { listeners: Set<WatchListener>; stop: () => void }>();
  private cleared = false;

  constructor(private readonly subscribe: Subscribe) {}

  /** add registers a listener for `lock`; the returned function removes it (idempotent). */
  add(lock: string, listener: WatchListener): () => void {
    let entry = this.byLock.get(lock);
    if (!entry) {
      const listeners = new Set<WatchListener>();
      entry = { listeners, stop: () => {} };
      this.byLock.set(lock, entry);
      entry.stop = this.subscribe(lock);
    }
    const own = entry;
    own.listeners.add(listener);
    return () => {
      if (!own.listeners.delete(listener) || own.listeners.size > 0) return;
      if (this.byLock.get(lock) === own) this.byLock.delete(lock);
      own.stop();
    };
  }

  /** emit tells every listener of `lock` (the record when known, undefined for "read it"). */
  emit(lock: string, record: LeaseRecord | null | undefined): void {
    if (this.cleared) return;
    const entry = this.byLock.get(lock);
    if (!entry) return;
    for (const listener of [...entry.listeners]) {
      try {
        listener(record);
      } catch {
        // The contract says listeners must not throw; one that does cannot stop the others.
      }
    }
  }

  /** emitAll tells every listener of every lock to read again (e.g. the change feed dropped). */
  emitAll(): void {
    for (const lock of [...this.byLock.keys()]) this.emit(lock, undefined);
  }

  /** locks lists the locks with listeners. */
  locks(): string[] {
    return [...this.byLock.keys()];
  }

  /** clear drops every listener and subscription (on close). */
  clear(): void {
    this.cleared = true;
    const entries = [...this.byLock.values()];
    this.byLock.clear();
    for (const e of entries) e.stop();
  }
}
