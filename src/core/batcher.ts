import { renewalWrite } from './lease-writes.js';
import { renewedRecord, type LeaseRecord, type LeaseStore, type RevisionRenewal, type WriteResult } from './store.js';

/**
 * PendingRenewal is one renewal waiting in a batcher: the record it renews and the promise its
 * elector awaits. It is itself the item handed to `renewRevisions` (lock, expected revision,
 * renewedAt, lease duration), so a renewal allocates this one object and its promise.
 */
export class PendingRenewal implements RevisionRenewal {
  readonly expected: string;
  readonly leaseDurationMs: number;
  readonly result: Promise<WriteResult>;
  resolve!: (r: WriteResult) => void;
  /** reject settles the renewal with `err` (the elector's deadline timer cancels through it). */
  reject!: (err: unknown) => void;

  constructor(
    readonly lock: string,
    readonly record: LeaseRecord,
    readonly renewedAt: number,
  ) {
    this.expected = record.revision;
    this.leaseDurationMs = record.leaseDurationMs;
    this.result = new Promise<WriteResult>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
}

/** LOST is the answer to a renewal whose compare failed when the store did not say why. */
const LOST: WriteResult = Object.freeze({ ok: false });

/**
 * RenewBatcher coalesces renewals of leases held through one store into one round trip.
 * Renewals that become due in the same turn of the event loop (renewals fall on a shared grid,
 * many-leases.ts) are flushed together on the next `setImmediate`: through `renewRevisions`
 * when the store has it (revisions in and out, no record encoded), else `renewMany`; stores
 * with neither get individual writes, sent concurrently.
 */
export class RenewBatcher {
  private pending: PendingRenewal[] = [];
  private scheduled = false;

  constructor(private readonly store: LeaseStore) {}

  /** renew queues a renewal of `record` (held on `lock`) with renewedAt `wallMs`. */
  renew(lock: string, record: LeaseRecord, wallMs: number): PendingRenewal {
    const p = new PendingRenewal(lock, record, wallMs);
    this.pending.push(p);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    return p;
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    const store = this.store;
    if (store.renewRevisions) {
      store.renewRevisions(batch).then(
        (revisions) => {
          for (let i = 0; i < batch.length; i++) {
            const p = batch[i]!;
            const revision = revisions[i];
            p.resolve(typeof revision === 'string' ? { ok: true, record: renewedRecord(p.record, p.renewedAt, revision) } : LOST);
          }
        },
        (err) => batch.forEach((p) => p.reject(err)),
      );
      return;
    }
    const writes = batch.map((p) => ({ lock: p.lock, expected: p.expected, next: renewalWrite(p.record, p.renewedAt) }));
    if (batch.length === 1 || !store.renewMany) {
      writes.forEach((w, i) => store.write(w.lock, w.expected, w.next).then(batch[i]!.resolve, batch[i]!.reject));
      return;
    }
    store.renewMany(writes).then(
      (results) => batch.forEach((p, i) => p.resolve(results[i] ?? LOST)),
      (err) => batch.forEach((p) => p.reject(err)),
    );
  }
}

const batchers = new WeakMap<LeaseStore, RenewBatcher>();

/** batcherFor returns the one RenewBatcher shared by every elector using `store`. */
export function batcherFor(store: LeaseStore): RenewBatcher {
  let b = batchers.get(store);
  if (!b) batchers.set(store, (b = new RenewBatcher(store)));
  return b;
}
