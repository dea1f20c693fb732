/**
 * The Lease object as baton writes and reads it (coordination.k8s.io/v1), compatible with
 * client-go's LeaseLock:
 *
 *   apiVersion: coordination.k8s.io/v1
 *   kind: Lease
 *   metadata:
 *     name: <lease name>            # names.ts
 *     resourceVersion: "<rv>"       # the record's revision (compare-and-set key)
 *     annotations:                  # baton-only fields; client-go carries them along untouched
 *       baton.dev/lock: <lock name, exactly as given>
 *       baton.dev/term: "<fencing term>"
 *       baton.dev/holder: <holder the annotations below belong to>
 *       baton.dev/lease-ms: "<lease duration in ms>"
 *       baton.dev/step-down: "true"           # only while requested
 *       baton.dev/metadata: '<holder metadata as JSON>'
 *       baton.dev/floor-version: "<rv>"       # the term floor's resourceVersion after this term's raise
 *   spec:
 *     holderIdentity: <holder>      # "" when released (as client-go's ReleaseOnCancel writes)
 *     leaseDurationSeconds: <ceil(lease ms / 1000), at least 1>
 *     acquireTime: "2026-11-24T05:00:00.123000Z"   # MicroTime: exactly six fractional digits
 *     renewTime:   "2026-11-24T05:00:01.123000Z"
 *     leaseTransitions: <number of holder changes>
 *
 * When another client (client-go) takes the Lease, the annotations stay behind, stale:
 * `baton.dev/holder` then differs from `spec.holderIdentity`, and only the term (the last one
 * baton handed out) is read from them.
 */
import { HANDOVER_KEYS, type HolderMetadata, type LeaseRecord, type LeaseWrite } from '../../core/store.js';

const { to: HANDOVER_TO, ack: HANDOVER_ACK } = HANDOVER_KEYS;

/** ANNOTATION names the annotations baton keeps on its Leases. */
export const ANNOTATION = Object.freeze({
  lock: 'baton.dev/lock',
  term: 'baton.dev/term',
  holder: 'baton.dev/holder',
  leaseMs: 'baton.dev/lease-ms',
  stepDown: 'baton.dev/step-down',
  metadata: 'baton.dev/metadata',
  floorVersion: 'baton.dev/floor-version',
  ledgerKey: 'baton.dev/ledger-key',
  ledgerValue: 'baton.dev/ledger-value',
});

/** LABEL_KIND marks baton's helper Leases (`term`, `ledger`) so listings can tell them apart. */
export const LABEL_KIND = 'baton.dev/kind';

/** ObjectMeta is the part of metadata baton reads and writes. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  resourceVersion?: string;
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [key: string]: unknown;
}

/** LeaseSpec is coordination.k8s.io/v1 LeaseSpec (the fields client-go's LeaseLock uses). */
export interface LeaseSpec {
  holderIdentity?: string | null;
  leaseDurationSeconds?: number | null;
  acquireTime?: string | null;
  renewTime?: string | null;
  leaseTransitions?: number | null;
  [key: string]: unknown;
}

/** Lease is a coordination.k8s.io/v1 Lease object. */
export interface Lease {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: ObjectMeta;
  spec: LeaseSpec;
}

/** LeaseList is what a LIST returns. */
export interface LeaseList {
  metadata: { resourceVersion?: string };
  items: Lease[];
}

/** microTime renders ms since the epoch as a MicroTime: RFC 3339, UTC, six fractional digits. */
export function microTime(ms: number): string {
  const whole = Math.floor(ms);
  const micros = Math.min(999, Math.round((ms - whole) * 1000));
  const iso = new Date(whole).toISOString(); // …T05:00:00.123Z
  return `${iso.slice(0, -1)}${String(micros).padStart(3, '0')}Z`;
}

/** parseMicroTime reads a MicroTime (or any RFC 3339 time) as ms since the epoch; 0 when absent or bad. */
export function parseMicroTime(text: string | null | undefined): number {
  if (!text) return 0;
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(text);
  if (!m) return 0;
  const base = Date.parse(`${m[1]}${m[3]}`);
  if (!Number.isFinite(base)) return 0;
  const fraction = m[2] ? Number(`0.${m[2]}`) * 1000 : 0;
  return base + fraction;
}

/** leaseSeconds is the whole seconds client-go reads for a lease of `ms`: rounded up, at least 1. */
export function leaseSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** ownedByBaton tells whether the annotations describe the current holder (baton wrote both). */
function ownedByBaton(lease: Lease): boolean {
  const a = lease.metadata.annotations ?? {};
  return a[ANNOTATION.holder] !== undefined && a[ANNOTATION.holder] === (lease.spec.holderIdentity ?? '');
}

/** termOf reads the term annotation: the last term baton handed out on this Lease (0 if none). */
export function termOf(lease: Lease | null | undefined): number {
  const n = Number(lease?.metadata.annotations?.[ANNOTATION.term]);
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

/** floorVersionOf is the term floor's resourceVersion recorded with the Lease's term, if any. */
export function floorVersionOf(lease: Lease | null | undefined): string | undefined {
  const v = lease?.metadata.annotations?.[ANNOTATION.floorVersion];
  return v ? v : undefined;
}

/** lockOf is the lock a Lease stands for: its annotation, else its name (a client-go Lease). */
export function lockOf(lease: Lease): string {
  return lease.metadata.annotations?.[ANNOTATION.lock] ?? lease.metadata.name;
}

/** toRecord reads a Lease as baton's LeaseRecord (see the header for stale annotations). */
export function toRecord(lease: Lease, lock = lockOf(lease)): LeaseRecord {
  const a = lease.metadata.annotations ?? {};
  const spec = lease.spec ?? {};
  const owned = ownedByBaton(lease);
  const seconds = Number(spec.leaseDurationSeconds) > 0 ? Number(spec.leaseDurationSeconds) : 1;
  const exactMs = Number(a[ANNOTATION.leaseMs]);
  // The exact duration only while it still matches the whole seconds a client-go reader sees.
  const leaseDurationMs = owned && exactMs > 0 && leaseSeconds(exactMs) === seconds ? exactMs : seconds * 1000;
  let metadata: HolderMetadata = {};
  if (owned && a[ANNOTATION.metadata]) {
    try {
      const parsed = JSON.parse(a[ANNOTATION.metadata]!);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) metadata = parsed;
    } catch {
      // someone else's edit: no metadata rather than a failure
    }
  }
  // Kubernetes' own way to ask for a handover: spec.preferredHolder naming someone else. On a
  // Lease baton holds it reads as baton's ask (core/handover.ts): a baton candidate of that name
  // accepts, and the leader drains and hands over at once instead of at its renew deadline.
  const preferred = (spec as { preferredHolder?: unknown }).preferredHolder;
  if (owned && spec.holderIdentity && typeof preferred === 'string' && preferred !== '' && preferred !== spec.holderIdentity && metadata[HANDOVER_TO] === undefined) {
    metadata = { ...metadata, [HANDOVER_TO]: preferred };
  }
  return Object.freeze({
    lock,
    holder: spec.holderIdentity ? spec.holderIdentity : null,
    term: termOf(lease),
    leaseDurationMs,
    acquiredAt: parseMicroTime(spec.acquireTime),
    renewedAt: parseMicroTime(spec.renewTime),
    transitions: Number(spec.leaseTransitions) > 0 ? Number(spec.leaseTransitions) : 0,
    stepDownRequested: owned && a[ANNOTATION.stepDown] === 'true',
    metadata: Object.freeze(metadata),
    revision: String(lease.metadata.resourceVersion ?? ''),
  });
}

/**
 * toLease builds the Lease to send for `next` with fencing term `term`, on top of `base` (the
 * object as read, so labels and annotations of others survive) or a fresh one; an acquisition
 * passes the floor's new resourceVersion (`floorVersion`), which renewals then carry along.
 */
export function toLease(name: string, lock: string, next: LeaseWrite, term: number, base?: Lease, floorVersion?: string): Lease {
  const annotations: Record<string, string> = { ...(base?.metadata.annotations ?? {}) };
  annotations[ANNOTATION.lock] = lock;
  annotations[ANNOTATION.term] = String(term);
  if (floorVersion !== undefined) annotations[ANNOTATION.floorVersion] = floorVersion;
  annotations[ANNOTATION.holder] = next.holder ?? '';
  annotations[ANNOTATION.leaseMs] = String(Math.round(next.leaseDurationMs));
  // An ask read from spec.preferredHolder (see toRecord) stays there: not copied into the annotation.
  const preferred = (base?.spec as { preferredHolder?: unknown } | undefined)?.preferredHolder;
  const { [HANDOVER_TO]: askedTo, ...rest } = next.metadata ?? {};
  const derived = askedTo !== undefined && askedTo === preferred && rest[HANDOVER_ACK] === undefined;
  annotations[ANNOTATION.metadata] = JSON.stringify(derived ? rest : (next.metadata ?? {}));
  if (next.stepDownRequested) annotations[ANNOTATION.stepDown] = 'true';
  else delete annotations[ANNOTATION.stepDown];
  const metadata: ObjectMeta = { ...(base?.metadata ?? {}), name, annotations };
  delete metadata.managedFields;
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata,
    spec: {
      ...(base?.spec ?? {}),
      holderIdentity: next.holder ?? '',
      leaseDurationSeconds: leaseSeconds(next.leaseDurationMs),
      acquireTime: microTime(next.acquiredAt),
      renewTime: microTime(next.renewedAt),
      leaseTransitions: Math.max(0, Math.round(next.transitions)),
    },
  };
}
