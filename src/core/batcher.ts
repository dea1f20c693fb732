import type { LeaseStore, RenewRequest, WriteResult } from './store.js';

/**
 * RenewBatcher coalesces renewals of leases held through one store into one `renewMany` round
 * trip. Renewals that become due in the same turn of the event loop (every elector created
 * together renews on the same schedule) are flushed together on the next `setImmediate`.
 * Stores without batch renewal get individual writes, sent concurrently.
 */
export class RenewBatcher {
  private pending: { req: RenewRequest; resolve: (r: WriteResult) => void; reject: (e: unknown) => void }[] = [];
  private scheduled = false;

  constructor(private readonly store: LeaseStore) {}

  renew(req: RenewRequest): Promise<WriteResult> {
    return new Promise((resolve, reject) => {
      this.pending.push({ req, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    if (batch.length === 1 || !this.store.renewMany) {
      for (const item of batch) {
        this.store.write(item.req.lock, item.req.expected, item.req.next).then(item.resolve, item.reject);
      }
      return;
    }
    this.store.renewMany(batch.map((b) => b.req)).then(
      (results) => batch.forEach((b, i) => b.resolve(results[i] ?? { ok: false })),
      (err) => batch.forEach((b) => b.reject(err)),
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
