import { renewalWrite } from './lease-writes.js';
import { renewedRecord, type LeaseRecord, type LeaseStore, type RevisionRenewal, type WriteResult } from './store.js';

/** RenewalAnswer is told the outcome of a PendingRenewal: a result, or else the error that ended it. */
export type RenewalAnswer = (p: PendingRenewal, result: WriteResult | undefined, err?: unknown) => void;

/**
 * PendingRenewal is one renewal waiting in a batcher: the record it renews, when it was sent,
 * and whom to answer. It is itself the item handed to `renewRevisions` (lock, expected
 * revision, renewedAt, lease duration), so a renewal allocates this one object — no promise and
 * no closure: the answer goes to a callback its elector made once (`answer`).
 */
export class PendingRenewal implements RevisionRenewal {
  readonly expected: string;
  readonly leaseDurationMs: number;
  private settled = false;

  constructor(
    readonly lock: string,
    readonly record: LeaseRecord,
    readonly renewedAt: number,
    /** Monotonic time at which the renewal was handed to the batcher (its deadline counts from it). */
    readonly startMs: number,
    private readonly answer: RenewalAnswer,
  ) {
    this.expected = record.revision;
    this.leaseDurationMs = record.leaseDurationMs;
  }

  /**
   * resolve answers with the store's result (once; later answers are ignored). A batch is
   * answered in one loop, so an answer that throws is rethrown on its own, not into the loop.
   */
  resolve(result: WriteResult): void {
    if (this.settled) return;
    this.settled = true;
    try {
      this.answer(this, result);
    } catch (err) {
      queueMicrotask(() => {
        throw err;
      });
    }
  }

  /**
   * reject ends the renewal with `err` (once). The answer comes in a microtask, as a promise's
   * would: the deadline timer cancels through here and steps down before the elector hears.
   */
  reject(err: unknown): void {
    if (this.settled) return;
    this.settled = true;
    queueMicrotask(() => this.answer(this, undefined, err));
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

  /** renew queues a renewal of `record` (held on `lock`) with renewedAt `wallMs`, sent at monotonic `startMs`; `answer` hears the outcome. */
  renew(lock: string, record: LeaseRecord, wallMs: number, startMs: number, answer: RenewalAnswer): PendingRenewal {
    const p = new PendingRenewal(lock, record, wallMs, startMs, answer);
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
      writes.forEach((w, i) => store.write(w.lock, w.expected, w.next).then((r) => batch[i]!.resolve(r), (err) => batch[i]!.reject(err)));
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
