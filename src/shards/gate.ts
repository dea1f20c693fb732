/**
 * GatedStore wraps a shard group's store for its shard electors: a campaign for a shard that is
 * not assigned to this member is held back (its acquiring write is answered as a lost race,
 * without reaching the store), while the elector goes on watching the record and timing its
 * expiry. When the shard becomes this member's, `open(lock)` wakes the elector with a change
 * notification (spurious notifications are allowed by the store contract), and it acquires at
 * once if the lease has already been seen expired. Renewals and releases pass straight through.
 *
 * Reads and acquiring writes also wait for one of `concurrency` slots (default 16): a member that
 * is given hundreds of shards at once (the first member of a group, or the heir of a large member)
 * starts hundreds of electors, and without a limit their reads and acquisitions fill the store
 * client's queue (a PostgreSQL pool of 4) ahead of the renewals of the shards already held, which
 * then miss their renew deadline — 1,000 shards on one member lost every lease that way. Renewals
 * never wait for a slot. Waiting is safe: an elector times a lease from when it called write.
 */
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
  private readonly slots: Slots;

  constructor(
    private readonly inner: LeaseStore,
    private readonly mayAcquire: (lock: string) => boolean,
    concurrency = 16,
  ) {
    this.slots = new Slots(concurrency);
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

  get watchLive(): boolean | undefined {
    return this.inner.watchLive;
  }

  read(lock: string): Promise<LeaseRecord | null> {
    return this.slots.run(() => this.inner.read(lock));
  }

  async write(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    if (!next.newTerm) return this.inner.write(lock, expected, next);
    if (!this.mayAcquire(lock)) return { ok: false };
    // Asked again once a slot is free: the shard may have been reassigned while this write waited.
    return this.slots.run<WriteResult>(() => (this.mayAcquire(lock) ? this.inner.write(lock, expected, next) : Promise.resolve({ ok: false })));
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
