/**
 * Watchers holds one store's watch listeners per lock and delivers changes to them. A change
 * can arrive twice — directly from a write this store made, and again by NOTIFY — or late, after
 * a newer one. Revisions only grow per lock (they come from one sequence, taken while the row
 * is locked), so anything not newer than the last delivered revision is dropped.
 */
import type { LeaseRecord, WatchListener } from '../../core/store.js';
import { PayloadDecoder } from './sql.js';

/** Watchers: see the header comment. */
export class Watchers {
  private readonly byLock = new Map<string, { listeners: Set<WatchListener>; lastRevision?: string; decoder?: PayloadDecoder }>();
  private closed = false;

  /** size is the number of locks watched. */
  get size(): number {
    return this.byLock.size;
  }

  /** has tells whether anyone watches `lock`. */
  has(lock: string): boolean {
    return this.byLock.has(lock);
  }

  /** decoder is `lock`'s payload decoder (made on first use), or undefined when nobody watches it. */
  decoder(lock: string): PayloadDecoder | undefined {
    const entry = this.byLock.get(lock);
    return entry && (entry.decoder ??= new PayloadDecoder());
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
    if (revision !== undefined && isRevision(revision)) {
      if (entry.lastRevision !== undefined && !newer(revision, entry.lastRevision)) return;
      entry.lastRevision = revision;
    }
    // Listeners run on microtasks, after this loop: the set cannot change under it.
    for (const listener of entry.listeners) {
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

/** isRevision: a revision as the sequence gives it, decimal digits without a leading zero. */
function isRevision(r: string): boolean {
  if (r.length === 0 || r.length > 19 || (r.charCodeAt(0) === 48 && r.length > 1)) return false;
  for (let i = 0; i < r.length; i++) {
    const c = r.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** newer compares two such revisions as numbers: a longer one is bigger, else by text. */
function newer(a: string, b: string): boolean {
  return a.length !== b.length ? a.length > b.length : a > b;
}
