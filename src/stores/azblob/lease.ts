/**
 * How baton's lease maps onto an Azure blob lease, which lasts 15–60 s or forever.
 *
 * - leaseDuration ≤ 60 s: the blob lease lasts max(15 s, leaseDuration rounded up to whole
 *   seconds). The elector's leader stops at (start of its last successful renewal) +
 *   renewDeadline, and renewDeadline < leaseDuration ≤ the blob lease, which the server times
 *   from when it *received* that renewal — later than its start. So the leader has stopped before
 *   the server lets anyone else acquire. Below 15 s the server lease outlasts baton's: a crashed
 *   leader is replaced after up to 15 s instead of leaseDuration (a release still hands over at once).
 * - leaseDuration > 60 s: no finite blob lease is long enough, so the blob lease is infinite and
 *   the server never ends it. A candidate takes such a lease over only by breaking it, and only
 *   with `If-Match` on the ETag it watched stay unchanged for a whole leaseDuration (the
 *   elector's own expiry rule): any renewal in between rewrites the blob and fails the break.
 */
import { createHash } from 'node:crypto';

/** MIN_BLOB_LEASE_S and MAX_BLOB_LEASE_S are Azure's bounds on a finite blob lease. */
export const MIN_BLOB_LEASE_S = 15;
export const MAX_BLOB_LEASE_S = 60;
/** INFINITE is Azure's duration for a lease that never expires. */
export const INFINITE = -1;

/** blobLeaseSeconds is the blob lease for a baton lease of `leaseDurationMs` (see the file comment). */
export function blobLeaseSeconds(leaseDurationMs: number): number {
  if (leaseDurationMs > MAX_BLOB_LEASE_S * 1000) return INFINITE;
  return Math.max(MIN_BLOB_LEASE_S, Math.ceil(leaseDurationMs / 1000));
}

/**
 * proposedLeaseId is the lease ID an acquisition proposes: a GUID made from the lock, the
 * candidate (holder and elector instance) and the ETag it acquires from. A retry of the same
 * acquisition — after a timeout whose request may have landed — proposes the same ID, and Azure
 * answers an Acquire for the ID already holding the lease with success; any other acquisition
 * starts from another ETag, so it proposes another ID.
 */
export function proposedLeaseId(lock: string, holder: string, instance: string, fromEtag: string | null): string {
  const h = createHash('sha256').update(`${lock}\u0000${holder}\u0000${instance}\u0000${fromEtag ?? '(absent)'}`).digest('hex');
  // Shaped as a version-4 GUID, which is all Azure asks of a proposed lease ID.
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
