/**
 * memory: — an in-process store for tests and single-process apps, and the proof that a
 * compare-and-set store is only a backend: everything above the five operations below (the
 * record, the revision, the term rule, watching, the ledger) is the kit's CasStore.
 *
 * Items live in a Map per backend; `memory:` shares one backend per process, `memory:NAME` one
 * per name. Versions come from one counter per backend, so a key's version is never reused.
 * Watchers are told of every write with the new item, on a microtask.
 */
import { leaseKey, type BackendItem, type CasBackend, type ReplaceItem } from '../kit/backend.js';
import type { RenewRequest, WatchListener, WriteResult } from '../../core/store.js';
import { CasStore } from '../kit/cas-store.js';
import { ClosedGuard } from '../kit/guard.js';

/** MemoryBackend holds the data of one `memory:` store; handles share it. */
export class MemoryBackend {
  readonly items = new Map<string, BackendItem>();
  readonly watchers = new Map<string, Set<(item: BackendItem | null) => void>>();
  private version = 0;

  set(key: string, value: string): string {
    const item = Object.freeze({ key, value, version: String(++this.version) });
    this.items.set(key, item);
    this.notify(key, item);
    return item.version;
  }

  /** removeKey deletes one item. */
  removeKey(key: string): void {
    if (this.items.delete(key)) this.notify(key, null);
  }

  /** delete removes a lock's lease record, keeping its term counter (tests of fencing across deletion). */
  delete(lock: string): void {
    this.removeKey(leaseKey(lock));
  }

  private notify(key: string, item: BackendItem | null): void {
    const set = this.watchers.get(key);
    if (!set) return;
    for (const listener of [...set]) queueMicrotask(() => listener(item));
  }
}

const shared = new Map<string, MemoryBackend>();

/** MemoryHandle is one handle's CasBackend view of a MemoryBackend; closing it keeps the data. */
class MemoryHandle implements CasBackend {
  readonly name = 'memory';
  private readonly guard = new ClosedGuard('memory');
  private readonly unsubscribers = new Set<() => void>();

  constructor(readonly data: MemoryBackend) {}

  async get(key: string): Promise<BackendItem | null> {
    this.guard.check();
    return this.data.items.get(key) ?? null;
  }

  async create(key: string, value: string): Promise<string | null> {
    this.guard.check();
    return this.data.items.has(key) ? null : this.data.set(key, value);
  }

  async replace(key: string, version: string, value: string): Promise<string | null> {
    this.guard.check();
    return this.replaceNow({ key, version, value });
  }

  async replaceMany(items: readonly ReplaceItem[]): Promise<(string | null)[]> {
    this.guard.check();
    return items.map((i) => this.replaceNow(i));
  }

  async list(prefix: string, limit: number): Promise<BackendItem[]> {
    this.guard.check();
    return [...this.data.items.values()]
      .filter((i) => i.key.startsWith(prefix))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .slice(0, limit);
  }

  watch(key: string, onChange: (item: BackendItem | null) => void): () => void {
    let set = this.data.watchers.get(key);
    if (!set) this.data.watchers.set(key, (set = new Set()));
    const wrapped = (item: BackendItem | null) => {
      if (!this.guard.closed) onChange(item);
    };
    set.add(wrapped);
    const off = () => {
      set!.delete(wrapped);
      this.unsubscribers.delete(off);
    };
    this.unsubscribers.add(off);
    return off;
  }

  async remove(key: string, version: string): Promise<boolean> {
    this.guard.check();
    if (this.data.items.get(key)?.version !== version) return false;
    this.data.removeKey(key);
    return true;
  }

  async delete(key: string): Promise<void> {
    this.guard.check();
    this.data.removeKey(key);
  }

  async close(): Promise<void> {
    this.guard.close();
    for (const off of [...this.unsubscribers]) off();
  }

  private replaceNow(i: ReplaceItem): string | null {
    return this.data.items.get(i.key)?.version === i.version ? this.data.set(i.key, i.value) : null;
  }
}

/** MemoryStore is a handle on a MemoryBackend (a private one by default). */
export class MemoryStore extends CasStore {
  // The memory backend watches and renews in batches: these are always present.
  declare readonly watch: (lock: string, listener: WatchListener) => () => void;
  declare readonly renewMany: (requests: readonly RenewRequest[]) => Promise<WriteResult[]>;

  constructor(readonly backend: MemoryBackend = new MemoryBackend()) {
    super(new MemoryHandle(backend));
  }

  /** shared opens a handle on the process-wide backend called `name`. */
  static shared(name = ''): MemoryStore {
    let data = shared.get(name);
    if (!data) shared.set(name, (data = new MemoryBackend()));
    return new MemoryStore(data);
  }
}
