import type { IKeyValue } from 'etcd3';
import type { HolderMetadata, LeaseRecord, LeaseWrite } from '../../core/store.js';

/**
 * KeyLayout names every key the etcd store touches:
 *
 *   <prefix><lock>/<lease ID in hex>   one candidate of <lock>, attached to that lease
 *   <prefix><ledgerPrefix><key>        one ledger entry (no lease)
 *   <prefix>_baton/present/<lock>/<id>  one candidate's registry entry (presence.ts), attached to
 *                                      that candidate's lease; <id> is its identity, URI-encoded
 *
 * The candidate layout is etcd's own election layout (`etcdctl elect <prefix><lock>`).
 */
export class KeyLayout {
  readonly ledgerRoot: string;
  constructor(
    readonly prefix: string,
    ledgerPrefix: string,
  ) {
    this.ledgerRoot = prefix + ledgerPrefix;
  }

  /** lockPrefix is `<prefix><lock>/`, under which the lock's candidates live. */
  lockPrefix(lock: string): string {
    return `${this.prefix}${lock}/`;
  }

  /** candidateKey names a candidate by its lease ID in hex, as etcd's election does. */
  candidateKey(lock: string, leaseId: string): string {
    return this.lockPrefix(lock) + BigInt(leaseId).toString(16);
  }

  /** presencePrefix is where `lock`'s registry entries live (never a lock: no lock name starts with `_`). */
  presencePrefix(lock: string): string {
    return `${this.prefix}_baton/present/${lock}/`;
  }

  /** presenceKey names `identity`'s registry entry for `lock`. */
  presenceKey(lock: string, identity: string): string {
    return this.presencePrefix(lock) + encodeURIComponent(identity);
  }

  /** ledgerKey maps a ledger key to its etcd key. */
  ledgerKey(key: string): string {
    return this.ledgerRoot + key;
  }

  /**
   * lockOf tells which lock a key is a candidate of, or undefined when it is not a candidate
   * key (a ledger entry, a key without a lease, a key outside the prefix).
   */
  lockOf(kv: IKeyValue): string | undefined {
    const key = kv.key.toString();
    if (kv.lease === '0' || !key.startsWith(this.prefix) || key.startsWith(this.ledgerRoot)) return undefined;
    const rest = key.slice(this.prefix.length);
    const slash = rest.lastIndexOf('/');
    if (slash <= 0 || slash === rest.length - 1) return undefined;
    const lock = rest.slice(0, slash);
    return LOCK_NAME.test(lock) ? lock : undefined;
  }
}

const LOCK_NAME = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/;

/** prefixEnd is the exclusive end of the key range that starts with `prefix`. */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]!++;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]); // every byte is 0xff: to the end of the keyspace
}

/**
 * directCandidates keeps the candidates of exactly `lockPrefix`: `a/b/<id>` belongs to lock
 * `a/b`, not to lock `a`, although both lie under the prefix `a/`.
 */
export function directCandidates(lockPrefix: string, kvs: readonly IKeyValue[]): IKeyValue[] {
  return kvs.filter((kv) => {
    const rest = kv.key.toString().slice(lockPrefix.length);
    return rest.length > 0 && !rest.includes('/');
  });
}

/** revisionOf is a record's compare-and-set key: it changes on every write of the key. */
export function revisionOf(kv: IKeyValue): string {
  return `${kv.create_revision}:${kv.mod_revision}`;
}

/** parseRevision splits `create:mod`; undefined when `revision` is not one of ours. */
export function parseRevision(revision: string): { create: string; mod: string } | undefined {
  const m = /^(\d+):(\d+)$/.exec(revision);
  return m ? { create: m[1]!, mod: m[2]! } : undefined;
}

/** FOREIGN_LEASE_MS is assumed for candidates baton did not write (etcdctl's default session TTL). */
export const FOREIGN_LEASE_MS = 60_000;

export interface StoredValue {
  baton: 1;
  holder: string;
  leaseDurationMs: number;
  acquiredAt: number;
  renewedAt: number;
  transitions: number;
  stepDownRequested: boolean;
  metadata: HolderMetadata;
}

/** encodeValue is the JSON baton keeps in a candidate key (`baton: 1` marks it as ours). */
export function encodeValue(write: LeaseWrite, holder: string): Buffer {
  const value: StoredValue = {
    baton: 1,
    holder,
    leaseDurationMs: write.leaseDurationMs,
    acquiredAt: write.acquiredAt,
    renewedAt: write.renewedAt,
    transitions: write.transitions,
    stepDownRequested: write.stepDownRequested,
    metadata: withoutEtcdFields(write.metadata ?? {}),
  };
  return Buffer.from(JSON.stringify(value));
}

/**
 * toRecord presents a candidate key as a lease record. The term is the key's create revision:
 * etcd's revision counter is global, persisted and never goes back, so a later candidate always
 * has a higher one. A value baton did not write (e.g. an `etcdctl elect` proposal) becomes the
 * holder as it is, with etcdctl's default session TTL as its lease. `renewedAt` is the time of
 * this read (informational, like every wall-clock field).
 */
export function toRecord(lock: string, kv: IKeyValue): LeaseRecord {
  const raw = kv.value.toString();
  const stored = parseStored(raw);
  return Object.freeze({
    lock,
    holder: stored ? stored.holder : raw === '' ? '(empty proposal)' : raw,
    term: Number(kv.create_revision),
    leaseDurationMs: stored?.leaseDurationMs ?? FOREIGN_LEASE_MS,
    acquiredAt: stored?.acquiredAt ?? 0,
    // etcd records no renewal time (a renewal is a keepalive, not a write), but a key that
    // still exists was renewed within its TTL: as of this read it is live.
    renewedAt: Math.max(stored?.renewedAt ?? 0, Date.now()),
    transitions: stored?.transitions ?? 0,
    stepDownRequested: stored?.stepDownRequested ?? false,
    metadata: Object.freeze({ ...(stored?.metadata ?? {}), etcdKey: kv.key.toString(), etcdLease: kv.lease }),
    revision: revisionOf(kv),
  });
}

/** sameStoredMetadata: `a` and `b` store the same metadata (what toRecord adds aside). */
export function sameStoredMetadata(a: HolderMetadata, b: HolderMetadata): boolean {
  const x = withoutEtcdFields(a);
  const y = withoutEtcdFields(b);
  const keys = Object.keys(x);
  return keys.length === Object.keys(y).length && keys.every((k) => Object.is(x[k], y[k]) || JSON.stringify(x[k]) === JSON.stringify(y[k]));
}

/** withoutEtcdFields drops what toRecord adds, so it is never stored back stale. */
function withoutEtcdFields(metadata: HolderMetadata): HolderMetadata {
  const { etcdKey: _key, etcdLease: _lease, ...rest } = metadata;
  return rest;
}

/** parseStored reads what baton stored in a candidate key (undefined for a foreign value: its raw value is the holder). */
export function parseStored(raw: string): StoredValue | undefined {
  if (!raw.startsWith('{')) return undefined;
  try {
    const v = JSON.parse(raw) as Partial<StoredValue>;
    if (v && v.baton === 1 && typeof v.holder === 'string' && typeof v.leaseDurationMs === 'number') {
      return { ...v, metadata: v.metadata && typeof v.metadata === 'object' ? v.metadata : {} } as StoredValue;
    }
  } catch {
    // not baton's JSON: the raw value is the holder
  }
  return undefined;
}
