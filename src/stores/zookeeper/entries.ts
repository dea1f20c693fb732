import type { ZkSession } from './session.js';

/**
 * Entry is one (lock, identity) campaigning through this store handle: one latch node and one
 * record node, both ephemeral in `session`.
 * - `queued`: behind another entry; lives as long as its session (the handle is open).
 * - `first`: known to be at the front — a read showed it there, or the watch saw the deletion of
 *   the node that such a read showed at the front right ahead of it (sequence numbers only grow,
 *   so nothing can come ahead) — but not claimed yet: its campaign claims it with no read.
 * - `leading`: reported to its elector as leading; renewed by its elector's writes. An entry
 *   reported once is never reported again: a new campaign replaces it (a new node, a new term).
 */
export interface Entry {
  readonly lock: string;
  readonly identity: string;
  readonly uuid: string;
  /** The latch node's name (`_c_<uuid>-latch-<seq>`) and path. */
  readonly name: string;
  readonly path: string;
  readonly recordPath: string;
  readonly session: ZkSession;
  /** The session's client generation the nodes were made in (a new client means a new session). */
  readonly generation: number;
  /** The latch node's czxid: the term. */
  readonly czxid: number;
  /** Version of the record node as last written by this handle. */
  recordVersion: number;
  state: 'queued' | 'first' | 'leading';
  /** The handover ask and acceptance (`to|ack`) this handle last touched the ask node for, leading. */
  askTouched?: string;
}

/**
 * EntryRegistry keeps this handle's entries per lock, the uuids of creates whose outcome is
 * unknown (a connection lost mid-call: the node may exist, nobody would claim it), and runs
 * calls for one (lock, identity) one at a time.
 */
export class EntryRegistry {
  private readonly byLock = new Map<string, Map<string, Entry>>();
  private readonly suspects = new Map<string, Set<string>>();
  private readonly serials = new Map<string, Promise<unknown>>();

  get(lock: string, identity: string): Entry | undefined {
    return this.byLock.get(lock)?.get(identity);
  }
  ofLock(lock: string): Entry[] {
    return [...(this.byLock.get(lock)?.values() ?? [])];
  }
  all(): Entry[] {
    return [...this.byLock.values()].flatMap((m) => [...m.values()]);
  }
  withCzxid(lock: string, czxid: number): Entry | undefined {
    return this.ofLock(lock).find((e) => e.czxid === czxid);
  }
  add(e: Entry): void {
    let m = this.byLock.get(e.lock);
    if (!m) this.byLock.set(e.lock, (m = new Map()));
    m.set(e.identity, e);
  }
  remove(e: Entry): void {
    const m = this.byLock.get(e.lock);
    if (m?.get(e.identity) === e) m.delete(e.identity);
    if (m?.size === 0) this.byLock.delete(e.lock);
  }

  /** suspect records a create (or delete) of `uuid` whose outcome is unknown. */
  suspect(lock: string, identity: string, uuid: string): void {
    const k = key(lock, identity);
    let s = this.suspects.get(k);
    if (!s) this.suspects.set(k, (s = new Set()));
    s.add(uuid);
  }
  suspected(lock: string, identity: string): Set<string> | undefined {
    return this.suspects.get(key(lock, identity));
  }
  cleared(lock: string, identity: string, uuids: Iterable<string>): void {
    const s = this.suspects.get(key(lock, identity));
    if (!s) return;
    for (const u of uuids) s.delete(u);
    if (s.size === 0) this.suspects.delete(key(lock, identity));
  }

  /** serial runs `fn` after any earlier call for the same (lock, identity) has settled. */
  serial<T>(lock: string, identity: string, fn: () => Promise<T>): Promise<T> {
    const id = key(lock, identity);
    const run = (this.serials.get(id) ?? Promise.resolve()).then(fn, fn);
    const tail = run.catch(() => {});
    this.serials.set(id, tail);
    void tail.then(() => this.serials.get(id) === tail && this.serials.delete(id));
    return run;
  }
}

function key(lock: string, identity: string): string {
  return `${lock}\u0000${identity}`;
}
