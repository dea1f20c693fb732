/**
 * Watchers holds one store's watch listeners per lock and delivers changes to them. A change
 * can arrive twice — directly from a write this store made, and again by NOTIFY — or late, after
 * a newer one. Revisions only grow per lock (they come from one sequence, taken while the row
 * is locked), so anything not newer than the last delivered revision is dropped.
 */
import type { LeaseRecord, WatchListener } from '../../core/store.js';

/** Watchers: see the header comment. */
export class Watchers {
  private readonly byLock = new Map<string, { listeners: Set<WatchListener>; lastRevision?: bigint }>();
  private closed = false;

  /** size is the number of locks watched. */
  get size(): number {
    return this.byLock.size;
  }

  /** has tells whether anyone watches `lock`. */
  has(lock: string): boolean {
    return this.byLock.has(lock);
  }

  /** add registers a listener; the returned function removes it and tells whether none remain. */
  add(lock: string, listener: WatchListener): () => boolean {
    let entry = this.byLock.get(lock);
    if (!entry) this.byLock.set(lock, (entry = { listeners: new Set() }));
    const e = entry;
    e.listeners.add(listener);
    return () => {
      e.listeners.delete(listener);
      if (e.listeners.size === 0 && this.byLock.get(lock) === e) this.byLock.delete(lock);
      return this.byLock.size === 0;
    };
  }

  /**
   * deliver tells `lock`'s listeners, on a microtask: the record, or undefined for "read it".
   * `revision` (the record's, or announced without it) drops repeats and stale news.
   */
  deliver(lock: string, record: LeaseRecord | undefined, revision = record?.revision): void {
    const entry = this.byLock.get(lock);
    if (!entry) return;
    if (revision !== undefined && /^\d+$/.test(revision)) {
      const r = BigInt(revision);
      if (entry.lastRevision !== undefined && r <= entry.lastRevision) return;
      entry.lastRevision = r;
    }
    for (const listener of [...entry.listeners]) {
      queueMicrotask(() => {
        if (this.closed || !entry.listeners.has(listener)) return;
        try {
          listener(record);
        } catch {
          // Listeners must not throw; one that does must not silence the others.
        }
      });
    }
  }

  /** readAgain tells every listener to read: changes may have been missed. */
  readAgain(): void {
    for (const lock of this.byLock.keys()) this.deliver(lock, undefined);
  }

  /** close drops every listener; nothing is delivered afterwards. */
  close(): void {
    this.closed = true;
    this.byLock.clear();
  }
}
