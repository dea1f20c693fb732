/**
 * Object names of the Kubernetes store. Every lock is one Lease; baton's own helper objects are
 * Leases too (so RBAC on `leases` is all the store needs), under the reserved prefix `baton.`:
 *
 *   lock "web-cron"            → Lease "web-cron"          (a valid DNS-1123 subdomain: kept as is)
 *   lock "Jobs/Nightly Report" → Lease "baton.lock.jobs-nightly-report-<16 hex>"
 *   lock "baton.x"             → Lease "baton.lock.baton.x-<16 hex>" (the prefix is reserved)
 *   term floor of Lease L      → Lease "baton.term.<L>"  (or "baton.term.<hash>" if too long)
 *   ledger key K               → Lease "baton.ledger.<sanitized K, ≤ 40>-<16 hex>"
 *
 * The hash is the first 16 hex digits of SHA-256 of the exact lock name (or key), so the
 * mapping is deterministic across processes and languages; a sanitised prefix keeps it readable.
 */
import { createHash } from 'node:crypto';

/** DNS-1123 subdomain: what the API server accepts as a Lease name. */
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** DNS-1123 label: what the API server accepts as a namespace name. */
const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** RESERVED_PREFIX starts every object name baton derives; lock names starting with it are hashed. */
export const RESERVED_PREFIX = 'baton.';

/** isSubdomain tells whether `name` is a valid DNS-1123 subdomain (≤ 253 characters). */
export function isSubdomain(name: string): boolean {
  return name.length > 0 && name.length <= 253 && SUBDOMAIN.test(name);
}

/** isNamespaceName tells whether `name` is a valid namespace name (a DNS-1123 label). */
export function isNamespaceName(name: string): boolean {
  return LABEL.test(name);
}

/** shortHash is the first 16 hex digits of SHA-256 of `text`. */
export function shortHash(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16);
}

/** sanitize lower-cases `text` and keeps at most `max` characters of [a-z0-9.-], with runs of anything else as "-". */
function sanitize(text: string, max: number): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .slice(0, max)
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '')
    .replace(/\.{2,}|\.-|-\./g, '-');
}

/** leaseNameOf maps a lock name to its Lease's name (see the header comment). */
export function leaseNameOf(lock: string): string {
  if (isSubdomain(lock) && !lock.startsWith(RESERVED_PREFIX)) return lock;
  const readable = sanitize(lock, 40);
  return `${RESERVED_PREFIX}lock.${readable ? `${readable}-` : ''}${shortHash(lock)}`;
}

/** termFloorNameOf names the Lease that keeps the highest term handed out for Lease `leaseName`. */
export function termFloorNameOf(leaseName: string): string {
  const name = `${RESERVED_PREFIX}term.${leaseName}`;
  return name.length <= 253 ? name : `${RESERVED_PREFIX}term.${shortHash(leaseName)}`;
}

/** ledgerNameOf maps a ledger key to the Lease that holds its entry. */
export function ledgerNameOf(key: string): string {
  const readable = sanitize(key, 40);
  return `${RESERVED_PREFIX}ledger.${readable ? `${readable}-` : ''}${shortHash(key)}`;
}
