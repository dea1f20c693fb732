import type { IKeyValue } from 'etcd3';
import type { HolderMetadata, LeaseWrite } from '../../core/store.js';
import type { Rpc } from './client.js';
import { parseStored, prefixEnd, type KeyLayout } from './keys.js';

/**
 * RevocationGuard keeps a new leader on an etcd *cluster* from starting before its predecessor
 * has stopped, even when the predecessor's lease was revoked early (RELIABILITY finding 4).
 *
 * Why: a raft leader that was paused and resumes can revoke leases it finds "expired" by its own
 * stale lessor, and the new raft leader commits the revocation (etcd 3.4 always; 3.6.16 too, as
 * its guard skips the check for a process that has just ticked). The baton leader whose lease
 * went renewed correctly: its deadline is up to a renew deadline away, yet its key is gone and the
 * next candidate is at the front. No client can stop the revocation; the next leader can wait.
 *
 * The rule: a candidate that reaches the front leads only once its predecessor has surely
 * stopped — at once if the predecessor *released* (its elector stops the work before it
 * releases), otherwise one renew deadline of the predecessor after this candidate saw the key
 * gone (the predecessor's last counted refresh was sent before the revocation, and its deadline
 * is that send plus its renew deadline). A crash failover costs that renew deadline more; a
 * graceful handover costs one read.
 *
 * How a release is told from a revocation: a release deletes the key and, in the same txn, puts
 * the lock's marker `<prefix>_baton/released/<lock>` = `r:<key>`; every campaign that creates a
 * key puts `c:<key>` there. So:
 * - right behind a front key P that the watch saw deleted at revision R: P released iff the
 *   marker *at revision R* (a historical read) is `r:P`, written at R;
 * - otherwise (a read, or our own fresh key, found us at the front): the marker as it stood
 *   before our key existed or now must be `r:K` at some revision Rm, and no candidate key older
 *   than ours may have existed at Rm (a historical read of the lock's keys): then nobody led
 *   between K's release and us. A lock no guarded candidate ever used has no marker: nobody
 *   led it under the guard, nothing to wait for.
 * Anything else (a compacted revision, an error, a foreign key) waits the full renew deadline.
 *
 * The guard is on when the cluster has more than one member (asked once per handle): a single
 * member cannot be deposed, and a paused one answers no renewal while it is paused. The etcd URL's
 * `?revocationGuard=on|off` overrides that.
 */
export class RevocationGuard {
  private enabledP?: Promise<boolean>;

  constructor(
    private readonly rpc: Rpc,
    private readonly layout: KeyLayout,
    private readonly mode: 'auto' | 'on' | 'off',
  ) {}

  /** enabled: whether this handle applies the guard (and writes markers). */
  enabled(): Promise<boolean> {
    if (this.mode !== 'auto') return Promise.resolve(this.mode === 'on');
    this.enabledP ??= this.rpc
      .call('member list', (o) => this.rpc.client.cluster.memberList({ linearizable: false } as never, o))
      .then(
        (res) => res.members.length > 1,
        // Unknown (no permission, unreachable): the safe side, and asked again next time.
        () => {
          this.enabledP = undefined;
          return true;
        },
      );
    return this.enabledP;
  }

  /** markerKey is the lock's release/creation marker (outside its candidates' prefix). */
  markerKey(lock: string): Buffer {
    return Buffer.from(`${this.layout.prefix}_baton/released/${lock}`);
  }

  /** releasedOp is the put, in a release txn, that says key `key` was released. */
  releasedOp(lock: string, key: Buffer): { request_put: { key: Buffer; value: Buffer } } {
    return { request_put: { key: this.markerKey(lock), value: Buffer.from(`r:${key.toString()}`) } };
  }

  /** createdOp is the put, in a campaign txn that creates `key`, that says a key was created. */
  createdOp(lock: string, key: Buffer): { request_put: { key: Buffer; value: Buffer } } {
    return { request_put: { key: this.markerKey(lock), value: Buffer.from(`c:${key.toString()}`) } };
  }

  /**
   * releasedAt: whether front key `predecessor` was released at revision `deletedAt` (the marker
   * at that revision says so and was written then). False on any doubt.
   */
  async releasedAt(lock: string, predecessor: string, deletedAt: string): Promise<boolean> {
    try {
      const res = await this.rpc.call(`read marker "${lock}"`, (o) => this.rpc.client.kv.range({ key: this.markerKey(lock), revision: deletedAt }, o));
      const kv = res.kvs[0];
      return !!kv && kv.mod_revision === deletedAt && kv.value.toString() === `r:${predecessor}`;
    } catch {
      return false;
    }
  }

  /**
   * releasedBefore: whether the last leader ahead of the key created at `createRevision` released
   * — by `marker` (the lock's marker as read before our key existed, or now; null when absent):
   * it names a release, and no candidate key older than ours existed at its revision.
   */
  async releasedBefore(lock: string, marker: IKeyValue | null, createRevision: string): Promise<boolean> {
    if (marker === null) return true; // never used under the guard (see the class comment)
    if (!marker.value.toString().startsWith('r:')) return false;
    try {
      const prefix = Buffer.from(this.layout.lockPrefix(lock));
      const res = await this.rpc.call(`read "${lock}" at ${marker.mod_revision}`, (o) =>
        this.rpc.client.kv.range({ key: prefix, range_end: prefixEnd(prefix), revision: marker.mod_revision, keys_only: true }, o),
      );
      const ours = BigInt(createRevision);
      return !res.kvs.some((kv) => kv.lease !== '0' && BigInt(kv.create_revision) < ours);
    } catch {
      return false;
    }
  }

  /** readMarker reads the lock's marker now (null when absent). */
  async readMarker(lock: string): Promise<IKeyValue | null> {
    const res = await this.rpc.call(`read marker "${lock}"`, (o) => this.rpc.client.kv.range({ key: this.markerKey(lock) }, o));
    return res.kvs[0] ?? null;
  }
}

/** RENEW_DEADLINE_KEY carries a candidate's renew deadline in its key's metadata (read by the guard of the one behind it). */
export const RENEW_DEADLINE_KEY = 'renewDeadlineMs';

/** withRenewDeadline is `write` carrying `renewDeadlineMs` in its metadata, when given. */
export function withRenewDeadline(write: LeaseWrite, renewDeadlineMs: number | undefined): LeaseWrite {
  if (renewDeadlineMs === undefined || write.metadata[RENEW_DEADLINE_KEY] === renewDeadlineMs) return write;
  const metadata: HolderMetadata = { ...write.metadata, [RENEW_DEADLINE_KEY]: renewDeadlineMs };
  return { ...write, metadata };
}

/**
 * renewDeadlineOf: the renew deadline the candidate of `kv` declared, else (a baton key from
 * before the guard) its lease duration, else undefined (a foreign key).
 */
export function renewDeadlineOf(kv: IKeyValue | undefined): number | undefined {
  if (!kv) return undefined;
  const stored = parseStored(kv.value.toString());
  if (!stored) return undefined;
  const rd = stored.metadata[RENEW_DEADLINE_KEY];
  return typeof rd === 'number' && rd > 0 ? rd : stored.leaseDurationMs;
}
