/**
 * CasStore is a whole LeaseStore over a CasBackend (backend.ts): the record encoding, the
 * revision (the backend's version), the fencing-term rule, watching and the ledger are written
 * here once, so a compare-and-set store's folder holds only its backend.
 *
 * ## The term
 * Each lock has a counter item `term/<lock>` that is never deleted. An acquisition
 *   1. reads the lease and the counter together; a lease whose revision is not `expected` is a
 *      lost race, answered at once;
 *   2. reserves `max(counter, lease term) + 1` by compare-and-set on the counter — a reserved
 *      number is never handed out twice, and taking the max also survives a deleted counter;
 *   3. writes the lease with that term by compare-and-set on `expected`.
 * If step 3 loses, the reserved number is simply skipped: terms strictly increase, gaps are
 * allowed. Step 3 can only succeed if nobody wrote the lease since the caller read it, and any
 * acquirer that wrote in between reserved its number before that — so a later successful
 * acquisition always carries a higher term than every earlier one. Renewals and releases keep
 * the term: the store remembers the term of each revision it wrote or read, and reads the lease
 * only when it does not know it.
 *
 * The lease text also keeps the counter's version from its term's reservation (`tv`, carried by
 * every write of that term). While the counter is still at that version it holds exactly the
 * lease's term, so when the store knows the record at `expected` (a notification or a read
 * brought it) step 1 is skipped and step 2 is one compare-and-set at that version: a standby
 * claims with two writes and no read, and in a herd each loser makes one request. A version
 * that was refused (someone else reserved meanwhile, or the counter was deleted) is not tried
 * again for that revision; the next attempt reads as above.
 *
 * ## The renewal-only batch
 * With a backend's `renewValues`, `renewRevisions` renews many leases without encoding a record:
 * the backend rewrites only the renewedAt inside each stored text. A renewal keeps the term, so
 * a term remembered for the expected revision is carried over to the new one.
 */
import { InvalidConfigError } from '../../core/errors.js';
import type {
  Ledger,
  LedgerEntry,
  LedgerPutResult,
  LeaseRecord,
  LeaseStore,
  LeaseWrite,
  RenewRequest,
  RevisionRenewal,
  StoreCapabilities,
  WatchListener,
  WriteResult,
} from '../../core/store.js';
import { leaseKey, ledgerKey, termKey, type BackendItem, type CasBackend, type ReplaceItem } from './backend.js';
import { ClosedGuard } from './guard.js';
import { ListenerRegistry } from './listeners.js';
import { decodeRecord, decodeStored, encodeRecord, recordOf } from './record-codec.js';

/** CasStoreOptions tune what a CasStore claims on top of its backend. */
export interface CasStoreOptions {
  /** Lease durations are rounded up to this many ms by the backend. */
  leaseGranularityMs?: number;
}

/**
 * KnownTerm: what a store knows of a lock's lease at one revision — its term, the term counter's
 * version from that term's reservation (`tv`), a `tv` that the counter already refused (kept
 * while the lease carries it, so a stale hint costs each handle one refusal, not one per try),
 * and the record itself when this handle wrote or decoded it (a change feed's echo of that very
 * revision is then delivered without decoding: a version is never reused for a key).
 */
interface KnownTerm {
  readonly revision: string;
  readonly term: number;
  readonly tv?: string;
  readonly refusedTv?: string;
  readonly record?: LeaseRecord;
}

const LEASE_PREFIX = leaseKey('');
const LEDGER_PREFIX = ledgerKey('');
/** How many lock → term entries a store remembers before it forgets the oldest half. */
const TERM_CACHE_LIMIT = 50_000;

/** CasStore: see the file comment. */
export class CasStore implements LeaseStore {
  readonly kind: string;
  readonly capabilities: StoreCapabilities;
  readonly ledger: Ledger;
  readonly renewMany?: (requests: readonly RenewRequest[]) => Promise<WriteResult[]>;
  readonly renewRevisions?: (items: readonly RevisionRenewal[]) => Promise<(string | null)[]>;
  readonly watch?: (lock: string, listener: WatchListener) => () => void;
  private readonly guard: ClosedGuard;
  private readonly listeners: ListenerRegistry;
  /** lock → the term (and term counter version, `tv`) of the revision this store last wrote or read. */
  private readonly terms = new Map<string, KnownTerm>();

  constructor(protected readonly cas: CasBackend, options: CasStoreOptions = {}) {
    this.kind = cas.name;
    this.guard = new ClosedGuard(cas.name);
    this.listeners = new ListenerRegistry((lock) => this.subscribe(lock));
    this.capabilities = Object.freeze({
      serverExpiry: false,
      ...(options.leaseGranularityMs ? { leaseGranularityMs: options.leaseGranularityMs } : {}),
    });
    if (cas.replaceMany) this.renewMany = (requests) => this.renewBatch(requests);
    if (cas.renewValues) this.renewRevisions = (items) => this.renewValuesBatch(items);
    if (cas.watch) this.watch = (lock, listener) => (this.guard.check(), this.listeners.add(lock, listener));
    this.ledger = {
      get: (key) => this.ledgerGet(key),
      put: (key, expected, value) => this.ledgerPut(key, expected, value),
      list: (prefix, limit) => this.ledgerList(prefix, limit),
      ...(cas.remove ? { remove: (key: string, version: string) => this.ledgerRemove(key, version) } : {}),
    };
  }

  /** watchLive is the backend's (always live when it does not say). */
  get watchLive(): boolean {
    return this.cas.watchLive ?? true;
  }

  async read(lock: string): Promise<LeaseRecord | null> {
    this.guard.check();
    return this.remember(lock, await this.cas.get(leaseKey(lock)));
  }

  async write(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    this.guard.check();
    return next.newTerm ? this.acquire(lock, expected, next) : this.keep(lock, expected, next);
  }

  async list(): Promise<LeaseRecord[]> {
    this.guard.check();
    const items = await this.cas.list(LEASE_PREFIX, Number.MAX_SAFE_INTEGER);
    return items.map((item) => decodeRecord(item.key.slice(LEASE_PREFIX.length), item.value, item.version));
  }

  async close(): Promise<void> {
    if (!this.guard.close()) return;
    this.listeners.clear();
    await this.cas.close();
  }

  /** deleteRecord removes a lease record (tests of fencing across deletion); needs backend.delete. */
  async deleteRecord(lock: string): Promise<void> {
    if (!this.cas.delete) throw new InvalidConfigError(`${this.kind}: this backend cannot delete records`);
    await this.cas.delete(leaseKey(lock));
    this.terms.delete(lock);
  }

  private async acquire(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    const known = expected === null ? undefined : this.terms.get(lock);
    if (known?.revision === expected && known.tv !== undefined && known.tv !== known.refusedTv) {
      // 2, without step 1: the counter still at `tv` holds exactly known.term (see the file comment).
      const term = known.term + 1;
      const reserved = await this.cas.replace(termKey(lock), known.tv, String(term));
      if (reserved !== null) return this.writeAcquired(lock, expected, next, term, reserved);
      // Reserved by another acquirer (or the counter is gone): lost; read next time, not this hint.
      if (this.terms.get(lock) === known) this.terms.set(lock, { ...known, refusedTv: known.tv });
      return { ok: false };
    }
    // 1. The lease and the counter, read together.
    const [lease, counter] = await Promise.all([this.cas.get(leaseKey(lock)), this.cas.get(termKey(lock))]);
    const current = this.remember(lock, lease);
    if ((current?.revision ?? null) !== expected) return { ok: false, current };
    // 2. Reserve the next term.
    const counted = counter ? Number(counter.value) : 0;
    const term = Math.max(Number.isSafeInteger(counted) ? counted : 0, current?.term ?? 0) + 1;
    const reserved = counter ? await this.cas.replace(termKey(lock), counter.version, String(term)) : await this.cas.create(termKey(lock), String(term));
    // Another acquirer reserved first and is about to write the lease: this race is lost.
    if (reserved === null) return { ok: false };
    return this.writeAcquired(lock, expected, next, term, reserved);
  }

  /** writeAcquired is step 3: the lease with its reserved term, only if nobody wrote it since `expected`. */
  private async writeAcquired(lock: string, expected: string | null, next: LeaseWrite, term: number, tv: string): Promise<WriteResult> {
    const value = encodeRecord(next, term, tv);
    const version = expected === null ? await this.cas.create(leaseKey(lock), value) : await this.cas.replace(leaseKey(lock), expected, value);
    if (version === null) return { ok: false };
    return { ok: true, record: this.remembered(lock, recordOf(lock, next, term, version), tv) };
  }

  private async keep(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    if (expected === null) {
      // Create-if-absent without a new term: term 0 until someone acquires (only tests do this).
      const version = await this.cas.create(leaseKey(lock), encodeRecord(next, 0));
      return version === null ? { ok: false } : { ok: true, record: this.remembered(lock, recordOf(lock, next, 0, version)) };
    }
    const known = await this.termOf(lock, expected);
    if (known === null) return { ok: false };
    const version = await this.cas.replace(leaseKey(lock), expected, encodeRecord(next, known.term, known.tv));
    if (version === null) return { ok: false };
    return { ok: true, record: this.remembered(lock, recordOf(lock, next, known.term, version), known.tv) };
  }

  private async renewBatch(requests: readonly RenewRequest[]): Promise<WriteResult[]> {
    this.guard.check();
    const out: WriteResult[] = new Array(requests.length);
    const batch: { index: number; known: KnownTerm; item: ReplaceItem }[] = [];
    await Promise.all(
      requests.map(async (r, index) => {
        if (r.next.newTerm) {
          out[index] = await this.acquire(r.lock, r.expected, r.next);
          return;
        }
        const known = await this.termOf(r.lock, r.expected);
        if (known === null) out[index] = { ok: false };
        else batch.push({ index, known, item: { key: leaseKey(r.lock), version: r.expected, value: encodeRecord(r.next, known.term, known.tv) } });
      }),
    );
    const size = Math.max(1, this.cas.maxBatch ?? batch.length);
    for (let i = 0; i < batch.length; i += size) {
      const chunk = batch.slice(i, i + size);
      const versions = await this.cas.replaceMany!(chunk.map((c) => c.item));
      chunk.forEach((c, j) => {
        const r = requests[c.index]!;
        const version = versions[j];
        out[c.index] = version ? { ok: true, record: this.remembered(r.lock, recordOf(r.lock, r.next, c.known.term, version), c.known.tv) } : { ok: false };
      });
    }
    return out;
  }

  private async renewValuesBatch(items: readonly RevisionRenewal[]): Promise<(string | null)[]> {
    this.guard.check();
    const versions = await this.cas.renewValues!(items);
    items.forEach((item, j) => {
      const version = versions[j];
      const known = this.terms.get(item.lock);
      if (version && known?.revision === item.expected) this.terms.set(item.lock, { revision: version, term: known.term, tv: known.tv, refusedTv: known.refusedTv });
    });
    return versions;
  }

  /** termOf is the term (and `tv`) of `revision`, remembered or read; null if the lease is no longer at it. */
  private async termOf(lock: string, revision: string): Promise<KnownTerm | null> {
    const known = this.terms.get(lock);
    if (known?.revision === revision) return known;
    await this.read(lock);
    const read = this.terms.get(lock);
    return read?.revision === revision ? read : null;
  }

  private remember(lock: string, item: BackendItem | null): LeaseRecord | null {
    if (!item) return null;
    const { record, tv } = decodeStored(lock, item.value, item.version);
    return this.remembered(lock, record, tv);
  }

  private remembered(lock: string, record: LeaseRecord, tv?: string): LeaseRecord {
    if (this.terms.size >= TERM_CACHE_LIMIT && !this.terms.has(lock)) {
      let drop = TERM_CACHE_LIMIT / 2;
      for (const key of this.terms.keys()) {
        if (drop-- <= 0) break;
        this.terms.delete(key);
      }
    }
    const refusedTv = tv !== undefined && this.terms.get(lock)?.refusedTv === tv ? tv : undefined;
    this.terms.set(lock, { revision: record.revision, term: record.term, tv, refusedTv, record });
    return record;
  }

  private subscribe(lock: string): () => void {
    return this.cas.watch!(leaseKey(lock), (item) => {
      if (this.guard.closed) return;
      // An echo of a revision this handle wrote or already decoded (a leader hears each of its
      // own renewals) is that record: delivered without decoding the text again.
      const known = item ? this.terms.get(lock) : undefined;
      if (known?.record && known.revision === item!.version) return this.listeners.emit(lock, known.record);
      this.listeners.emit(lock, item === undefined ? undefined : this.remember(lock, item));
    });
  }

  private async ledgerGet(key: string): Promise<LedgerEntry | null> {
    this.guard.check();
    const item = await this.cas.get(ledgerKey(key));
    return item ? entryOf(key, item) : null;
  }

  private async ledgerPut(key: string, expected: string | null, value: string): Promise<LedgerPutResult> {
    this.guard.check();
    const version = expected === null ? await this.cas.create(ledgerKey(key), value) : await this.cas.replace(ledgerKey(key), expected, value);
    if (version !== null) return { ok: true, entry: Object.freeze({ key, value, version }) };
    return { ok: false, current: await this.ledgerGet(key) };
  }

  private async ledgerList(prefix: string, limit = 1000): Promise<LedgerEntry[]> {
    this.guard.check();
    const items = await this.cas.list(ledgerKey(prefix), limit);
    return items.map((item) => entryOf(item.key.slice(LEDGER_PREFIX.length), item));
  }

  private ledgerRemove(key: string, version: string): Promise<boolean> {
    this.guard.check();
    return this.cas.remove!(ledgerKey(key), version);
  }
}

function entryOf(key: string, item: BackendItem): LedgerEntry {
  return Object.freeze({ key, value: item.value, version: item.version });
}
