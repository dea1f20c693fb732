import { metadataJson } from '../../core/metadata-json.js';
import type { HolderMetadata, LeaseRecord, LeaseWrite, WriteResult } from '../../core/store.js';

/** The lease hash's fields, in the order the scripts and HMGET use. */
export const LEASE_FIELDS = ['rev', 'term', 'holder', 'step', 'data'] as const;

/** StoredLease is a lease hash as strings: [rev, term, holder, step, data]. */
type StoredLease = readonly [rev: string, term: string, holder: string, step: string, data: string];

/** The informational part of a record, kept as one JSON field. */
interface LeaseData {
  leaseDurationMs: number;
  acquiredAt: number;
  renewedAt: number;
  transitions: number;
  metadata: HolderMetadata;
}

/** encodeData is the `data` field written for `next`. */
export function encodeData(next: LeaseWrite): string {
  // Built by hand around the cached metadata JSON (a renewal's metadata never changes); the
  // same text as JSON.stringify of a LeaseData, non-finite numbers included (null).
  return (
    `{"leaseDurationMs":${num(next.leaseDurationMs)},"acquiredAt":${num(Math.round(next.acquiredAt))},` +
    `"renewedAt":${num(Math.round(next.renewedAt))},"transitions":${num(next.transitions)},"metadata":${metadataJson(next.metadata)}}`
  );
}

/** num writes a number as JSON.stringify would. */
function num(x: number): string {
  return Number.isFinite(x) ? String(x) : 'null';
}

/** decodeLease turns stored strings into a record; a free record when `holder` is null. */
export function decodeLease(lock: string, fields: StoredLease, holder: string | null = fields[2]): LeaseRecord {
  let data: Partial<LeaseData> = {};
  try {
    data = JSON.parse(fields[4]) as Partial<LeaseData>;
  } catch {
    // A hand-edited key: the record is still usable without its informational part.
  }
  return Object.freeze({
    lock,
    holder,
    term: Number(fields[1]),
    leaseDurationMs: Number(data.leaseDurationMs ?? 0),
    acquiredAt: Number(data.acquiredAt ?? 0),
    renewedAt: Number(data.renewedAt ?? 0),
    transitions: Number(data.transitions ?? 0),
    stepDownRequested: fields[3] === '1',
    metadata: Object.freeze({ ...(data.metadata ?? {}) }),
    revision: String(fields[0]),
  });
}

/** decodeHash reads an HMGET reply of LEASE_FIELDS; null when the key is absent. */
export function decodeHash(lock: string, reply: readonly (string | null)[] | null | undefined): LeaseRecord | null {
  if (!reply || reply[0] === null || reply[0] === undefined) return null;
  return decodeLease(lock, reply.map((v) => v ?? '') as unknown as StoredLease);
}

/** decodeWriteReply reads WRITE_LUA's reply. */
export function decodeWriteReply(lock: string, next: LeaseWrite, reply: unknown): WriteResult {
  if (!Array.isArray(reply) || reply.length === 0) throw new Error(`unexpected script reply ${JSON.stringify(reply)}`);
  const fields = reply.slice(1).map(String) as unknown as StoredLease;
  if (Number(reply[0]) === 1) {
    // The data field is what we sent: build the record from `next` instead of parsing it back.
    if (next.metadata && Object.isFrozen(next.metadata)) {
      return {
        ok: true,
        record: Object.freeze({
          lock,
          holder: next.holder,
          term: Number(fields[1]),
          leaseDurationMs: Number(next.leaseDurationMs),
          acquiredAt: Math.round(next.acquiredAt),
          renewedAt: Math.round(next.renewedAt),
          transitions: Number(next.transitions),
          stepDownRequested: fields[3] === '1',
          metadata: next.metadata,
          revision: String(fields[0]),
        }),
      };
    }
    return { ok: true, record: decodeLease(lock, fields, next.holder) };
  }
  return { ok: false, current: reply.length > 1 ? decodeLease(lock, fields) : null };
}

/**
 * decodeMessage reads what WRITE_LUA publishes: `null` (released) or a JSON array of the lease
 * fields. Anything else yields undefined: the listener reads the record itself.
 */
export function decodeMessage(lock: string, message: string): LeaseRecord | null | undefined {
  try {
    const parsed: unknown = JSON.parse(message);
    if (parsed === null) return null;
    if (Array.isArray(parsed) && parsed.length === LEASE_FIELDS.length) return decodeLease(lock, parsed.map(String) as unknown as StoredLease);
  } catch {
    // Someone else published on our channel: fall through.
  }
  return undefined;
}
