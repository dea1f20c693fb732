/**
 * GatedStore wraps a shard group's store for its shard electors: a campaign for a shard that is
 * not assigned to this member is held back (its acquiring write is answered as a lost race,
 * without reaching the store), while the elector goes on watching the record and timing its
 * expiry. When the shard becomes this member's, `open(lock)` wakes the elector with a change
 * notification (spurious notifications are allowed by the store contract), and it acquires at
 * once if the lease has already been seen expired. Renewals and releases pass straight through.
 *
 * It also keeps a member that is given many shards at once (the first member of a group, the
 * heir of a large member, every member of a group started together) from flooding its store
 * client, whose queue the renewals of the shards it already holds share (a PostgreSQL pool of 4
 * connections answers 4 statements at a time):
 *
 * - reads wait for one of `readSlots` (default 8) — waiting is harmless, a lease is timed from
 *   when its record was seen;
 * - acquiring writes never wait: at most `acquireSlots` (default 4) are in flight, and one asked
 *   for beyond that is answered at once as a lost race; its elector is woken (`open`) when a slot
 *   frees, reads the record again and retries. An elector times a lease it wins from when it
 *   called write, and one answered after its renew deadline is never led on, so a write that
 *   queued here would only make the next one later: under load (20 members on a busy 2-core
 *   machine, every statement taking most of a second through a pool queue 57 deep) nearly every
 *   acquisition of a PostgreSQL group came back past its 3 s deadline, was released again and
 *   retried, and 1,000 shards stayed unowned for minutes.
 */
import { HANDOVER_INSTANCE } from '../core/handover.js';
import type { LeaseRecord, LeaseStore, LeaseWrite, WatchListener, WriteResult } from '../core/store.js';

/** GatedStore: see the file comment. */
export class GatedStore implements LeaseStore {
  readonly kind: string;
  readonly capabilities: LeaseStore['capabilities'];
  readonly renewMany?: LeaseStore['renewMany'];
  readonly renewRevisions?: LeaseStore['renewRevisions'];
  readonly watch?: LeaseStore['watch'];
  readonly list?: LeaseStore['list'];
  readonly ledger?: LeaseStore['ledger'];
  readonly queue?: LeaseStore['queue'];
  private readonly listeners = new Map<string, Set<WatchListener>>();
  private readonly reads: Slots;
  /** Acquiring writes in flight. */
  private acquiring = 0;
  /** Locks whose acquisition was turned away for want of a slot, in order: woken as slots free. */
  private readonly turnedAway = new Set<string>();

  constructor(
    private readonly inner: LeaseStore,
    private readonly mayAcquire: (lock: string) => boolean,
    readSlots = 8,
    private readonly acquireSlots = 4,
  ) {
    this.reads = new Slots(readSlots);
    this.kind = inner.kind;
    this.capabilities = inner.capabilities;
    if (inner.renewMany) this.renewMany = (requests) => inner.renewMany!(requests);
    if (inner.renewRevisions) this.renewRevisions = (items) => inner.renewRevisions!(items);
    if (inner.list) this.list = () => inner.list!();
    this.ledger = inner.ledger;
    // On a queue store (etcd) an elector claims through `queue.campaign`: a campaign for a shard
    // that is not ours is answered as a lost race without enqueuing, and the elector campaigns
    // again when `open` wakes it (the dead owner's entry is removed by the server's own timer).
    if (inner.queue) {
      const queue = inner.queue;
      this.queue = {
        campaign: (lock, candidate) => (this.mayAcquire(lock) ? queue.campaign(lock, candidate) : Promise.resolve({ ok: false as const })),
        withdraw: (lock, holder) => queue.withdraw(lock, holder),
      };
    }
    if (inner.watch) {
      this.watch = (lock, listener) => {
        let set = this.listeners.get(lock);
        if (!set) this.listeners.set(lock, (set = new Set()));
        set.add(listener);
        const off = inner.watch!(lock, listener);
        return () => {
          set!.delete(listener);
          if (set!.size === 0) this.listeners.delete(lock);
          off();
        };
      };
    }
  }

  // The feed's state, read live from the inner store. Without these a shard elector would
  // believe the feed reports no expiries (and re-read once per lease + retry) and no renewals
  // (and miss the claim at the expiry it timed): the bench's wrapper once dropped them too.
  get watchLive(): boolean | undefined {
    return this.inner.watchLive;
  }

  get watchSeesExpiry(): boolean | undefined {
    return this.inner.watchSeesExpiry;
  }

  get watchSeesRenewals(): boolean | undefined {
    return this.inner.watchSeesRenewals;
  }

  read(lock: string): Promise<LeaseRecord | null> {
    return this.reads.run(() => this.inner.read(lock));
  }

  async write(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    // Held back are this member's own acquisitions only: a renewal, or a directed handover's give
    // of a shard to the member it is assigned to (core/handover.ts), goes straight through.
    if (!next.newTerm || next.metadata[HANDOVER_INSTANCE] !== undefined) return this.inner.write(lock, expected, next);
    if (!this.mayAcquire(lock)) return { ok: false };
    if (this.acquiring >= this.acquireSlots) {
      // Not queued (see the file comment): a lost race now, and a wake-up when a slot frees.
      this.turnedAway.add(lock);
      return { ok: false };
    }
    this.acquiring++;
    try {
      return await this.inner.write(lock, expected, next);
    } finally {
      this.acquiring--;
      this.wakeTurnedAway();
    }
  }

  /** wakeTurnedAway wakes the longest-waiting turned-away elector that may still acquire. */
  private wakeTurnedAway(): void {
    for (const lock of this.turnedAway) {
      this.turnedAway.delete(lock);
      if (!this.mayAcquire(lock) || !this.listeners.has(lock)) continue;
      this.open(lock);
      return;
    }
  }

  /** open wakes the electors watching `lock` (call when it may now be acquired). */
  open(lock: string): void {
    for (const listener of [...(this.listeners.get(lock) ?? [])]) listener(undefined);
  }

  /** wakeAll wakes every elector watching any lock, to read its record now. */
  wakeAll(): void {
    for (const lock of [...this.listeners.keys()]) this.open(lock);
  }

  /** The group's store is closed by its owner, not by the shard electors. */
  async close(): Promise<void> {}
}

/** Slots runs at most `size` tasks at once; the rest wait in order. */
class Slots {
  private busy = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly size: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.busy >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.busy++;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.busy--;
    }
  }
}
