/**
 * memory: — an in-process store for tests and single-process apps.
 *
 * Records live in a Map per backend; `memory:` shares one backend per process, `memory:NAME`
 * one per name. Terms come from a per-lock counter that is never reset (not by a release, not
 * by `delete`). Watchers are told of every write with the new record, on a microtask.
 */
import { StoreClosedError } from '../../core/errors.js';
import type {
  Ledger,
  LedgerEntry,
  LedgerPutResult,
  LeaseRecord,
  LeaseStore,
  LeaseWrite,
  RenewRequest,
  StoreCapabilities,
  WatchListener,
  WriteResult,
} from '../../core/store.js';

class MemoryBackend {
  readonly records = new Map<string, LeaseRecord>();
  readonly terms = new Map<string, number>();
  readonly watchers = new Map<string, Set<WatchListener>>();
  readonly entries = new Map<string, LedgerEntry>();
  private revision = 0;

  put(key: string, expected: string | null, value: string): LedgerPutResult {
    const current = this.entries.get(key) ?? null;
    if (expected === null ? current !== null : current?.version !== expected) return { ok: false, current };
    const entry = Object.freeze({ key, value, version: String(++this.revision) });
    this.entries.set(key, entry);
    return { ok: true, entry };
  }

  write(lock: string, expected: string | null, next: LeaseWrite): WriteResult {
    const current = this.records.get(lock) ?? null;
    if (expected === null ? current !== null : current?.revision !== expected) return { ok: false, current };
    let term = current?.term ?? this.terms.get(lock) ?? 0;
    if (next.newTerm) {
      term = (this.terms.get(lock) ?? 0) + 1;
      this.terms.set(lock, term);
    }
    const record: LeaseRecord = Object.freeze({
      lock,
      holder: next.holder,
      term,
      leaseDurationMs: next.leaseDurationMs,
      acquiredAt: next.acquiredAt,
      renewedAt: next.renewedAt,
      transitions: next.transitions,
      stepDownRequested: next.stepDownRequested,
      metadata: Object.freeze({ ...next.metadata }),
      revision: String(++this.revision),
    });
    this.records.set(lock, record);
    this.notify(lock, record);
    return { ok: true, record };
  }

  /** delete removes a record (the term counter stays): used by tests of fencing monotonicity. */
  delete(lock: string): void {
    if (this.records.delete(lock)) this.notify(lock, null);
  }

  private notify(lock: string, record: LeaseRecord | null): void {
    const set = this.watchers.get(lock);
    if (!set) return;
    for (const listener of [...set]) queueMicrotask(() => listener(record));
  }
}

const shared = new Map<string, MemoryBackend>();

/** MemoryStore is a handle on a MemoryBackend; closing it does not drop the data. */
export class MemoryStore implements LeaseStore {
  readonly kind = 'memory';
  readonly capabilities: StoreCapabilities = Object.freeze({ serverExpiry: false });
  private closed = false;
  readonly ledger: Ledger = {
    get: async (key) => (this.check(), this.backend.entries.get(key) ?? null),
    put: async (key, expected, value) => (this.check(), this.backend.put(key, expected, value)),
    list: async (prefix, limit = 1000) => {
      this.check();
      return [...this.backend.entries.values()].filter((e) => e.key.startsWith(prefix)).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).slice(0, limit);
    },
  };
  private readonly unsubscribers = new Set<() => void>();

  /** Create a handle on the backend called `name` (process-wide), or on a private one. */
  constructor(readonly backend: MemoryBackend = new MemoryBackend()) {}

  static shared(name = ''): MemoryStore {
    let backend = shared.get(name);
    if (!backend) shared.set(name, (backend = new MemoryBackend()));
    return new MemoryStore(backend);
  }

  async read(lock: string): Promise<LeaseRecord | null> {
    this.check();
    return this.backend.records.get(lock) ?? null;
  }

  async write(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    this.check();
    return this.backend.write(lock, expected, next);
  }

  async renewMany(requests: readonly RenewRequest[]): Promise<WriteResult[]> {
    this.check();
    return requests.map((r) => this.backend.write(r.lock, r.expected, r.next));
  }

  watch(lock: string, listener: WatchListener): () => void {
    this.check();
    let set = this.backend.watchers.get(lock);
    if (!set) this.backend.watchers.set(lock, (set = new Set()));
    const wrapped: WatchListener = (r) => {
      if (!this.closed) listener(r);
    };
    set.add(wrapped);
    const off = () => {
      set!.delete(wrapped);
      this.unsubscribers.delete(off);
    };
    this.unsubscribers.add(off);
    return off;
  }

  async list(): Promise<LeaseRecord[]> {
    this.check();
    return [...this.backend.records.values()].sort((a, b) => a.lock.localeCompare(b.lock));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const off of [...this.unsubscribers]) off();
  }

  private check(): void {
    if (this.closed) throw new StoreClosedError('memory');
  }
}

export type { MemoryBackend };
