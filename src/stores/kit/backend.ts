/**
 * CasBackend is the whole job of a compare-and-set store's author who uses the kit: a handful
 * of atomic operations on string values with versions. `CasStore` (cas-store.ts) builds the
 * lease record, the revision, the fencing-term rule, watching and the ledger on top of it, once.
 *
 * Keys are ASCII, at most ~540 characters, from three families the backend may map onto its
 * own naming (escaping, hashing) as long as the mapping is one-to-one and `list` sees the
 * original keys: `lease/<lock>`, `term/<lock>`, `ledger/<key>`.
 *
 * ## Atomicity and outcomes
 * - `create` succeeds only if the key is absent; `replace` only if the key's version equals
 *   `version`. Each is one atomic step; a condition that does not hold returns null — a lost
 *   race is a value, never an exception.
 * - A version is opaque and changes on every successful write of a key; it is never reused for
 *   that key (a counter, an etag, a resource version, an epoch:sequence pair).
 * - An unreachable or failing backend throws StoreUnavailableError (use kit/errors.ts).
 * - Leases and term counters are never deleted by CasStore: a released lease is rewritten with
 *   no holder, and the term counter stays forever. Only ledger entries are removed (`remove`,
 *   compare-and-delete). `delete` exists only for tests that prove deletion is survived.
 */
import type { RevisionRenewal } from '../../core/store.js';

/** BackendItem is one key's value and version. */
export interface BackendItem {
  readonly key: string;
  readonly value: string;
  readonly version: string;
}

/** ReplaceItem is one conditional replacement of a batch. */
export interface ReplaceItem {
  readonly key: string;
  readonly version: string;
  readonly value: string;
}

/** CasBackend: see the file comment. */
export interface CasBackend {
  /** Short name for messages and the store's `kind`, e.g. "dynamodb". */
  readonly name: string;
  /** get reads one key, or null if absent. Reads are linearizable (strongly consistent). */
  get(key: string): Promise<BackendItem | null>;
  /** create writes a new key; returns its version, or null if the key already exists. */
  create(key: string, value: string): Promise<string | null>;
  /** replace writes `value` if the key's version is `version`; returns the new version, or null. */
  replace(key: string, version: string, value: string): Promise<string | null>;
  /** list returns the items whose key starts with `prefix`, in key order, at most `limit`. */
  list(prefix: string, limit: number): Promise<BackendItem[]>;
  /**
   * replaceMany (optional) sends many replacements in one round trip; each succeeds or fails on
   * its own. `maxBatch` says how many fit in one call (CasStore splits larger batches).
   */
  replaceMany?(items: readonly ReplaceItem[]): Promise<(string | null)[]>;
  readonly maxBatch?: number;
  /**
   * renewValues (optional) is the renewal-only batch behind `LeaseStore.renewRevisions`: for
   * each item whose lease (key `leaseKey(item.lock)`) is still at version `item.expected`, it
   * rewrites only the `renewedAt` number inside the value with `item.renewedAt` — the first
   * `,"renewedAt":` of the text (record-codec.ts writes it before the metadata) — and gives the
   * key a new version; the rest of the value is not sent. Answers the new version or null, item
   * by item; gets the whole batch (it splits it as it needs).
   */
  renewValues?(items: readonly RevisionRenewal[]): Promise<(string | null)[]>;
  /**
   * watch (optional) calls `onChange` after a key changes: with the new item when known cheaply,
   * null when it is gone, undefined for "read it". Spurious calls are fine. Returns a stop function.
   */
  watch?(key: string, onChange: (item: BackendItem | null | undefined) => void): () => void;
  /** watchLive: false while a watch cannot hear changes (see LeaseStore.watchLive). */
  readonly watchLive?: boolean;
  /**
   * remove (optional) deletes a key only while its version is `version`, in one atomic step:
   * true when it did, false when the key is absent or at another version. A version handed out
   * before the remove is never the version of the key made again. Without it the store's ledger
   * has no `remove` (Ledger.remove).
   */
  remove?(key: string, version: string): Promise<boolean>;
  /** delete (optional, for tests) removes a key. */
  delete?(key: string): Promise<void>;
  /** close releases connections; idempotent. */
  close(): Promise<void>;
}

/** leaseKey, termKey and ledgerKey name the three key families. */
export const leaseKey = (lock: string): string => `lease/${lock}`;
export const termKey = (lock: string): string => `term/${lock}`;
export const ledgerKey = (key: string): string => `ledger/${key}`;
