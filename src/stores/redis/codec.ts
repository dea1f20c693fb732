import { metadataJson } from '../../core/metadata-json.js';
import { digitsEnd, flat, integerEnd, integerValue, renewedAs } from '../kit/renewal-text.js';
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

/**
 * MessageDecoder decodes the messages of one lock's channel, keeping the last record it decoded
 * to read the next renewal without parsing. A renewal changes two things in a record: its
 * revision and `renewedAt`. When a message's text outside those two values is the same as the
 * last message's (compared as text, character for character), its record is the last one with
 * them replaced: exactly what decodeMessage would return, without two JSON.parse calls and two
 * new frozen objects. A handle that leads 10,000 locks hears each of its 10,000 renewals every
 * cycle. Anything else — another holder or term, the step-down flag, other data, a release,
 * text of another shape — differs somewhere outside the two values and is decoded in full.
 */
export class MessageDecoder {
  /** The last message's text from the end of its revision to the start of its renewedAt value, and after that value. */
  private mid = '';
  private tail = '';
  private last?: LeaseRecord;

  constructor(readonly lock: string) {}

  decode(message: string): LeaseRecord | null | undefined {
    const last = this.last;
    if (last) {
      // Quick match: `["` revision mid renewedAt tail, with mid and tail the last message's. Its
      // cut would find the same pieces (mid and tail come from a message that cutRenewal cut).
      // Compared with ===, which is memcmp for flat strings (startsWith is far slower).
      const revEnd = message.charCodeAt(0) === 91 && message.charCodeAt(1) === Q ? digitsEnd(message, 2) : 2;
      const start = revEnd + this.mid.length;
      if (revEnd > 2 && message.slice(revEnd, start) === this.mid) {
        const end = integerEnd(message, start);
        if (end > start && message.length - end === this.tail.length && message.slice(end) === this.tail) {
          return (this.last = renewedAs(last, integerValue(message, start, end), message.slice(2, revEnd)));
        }
      }
    }
    const record = decodeMessage(this.lock, message);
    const cut = record ? cutRenewal(message) : undefined;
    this.mid = flat(cut?.mid ?? '');
    this.tail = flat(cut?.tail ?? '');
    this.last = cut && record ? record : undefined;
    return record;
  }
}

/** RenewalCut is a message cut around the two values a renewal changes. */
interface RenewalCut {
  revision: string;
  renewedAt: number;
  mid: string;
  tail: string;
}

const Q = 34; // "
const BACKSLASH = 92;
const DATA_HEAD = '{\\"leaseDurationMs\\":';
const ACQUIRED_KEY = ',\\"acquiredAt\\":';
const RENEWED_KEY = ',\\"renewedAt\\":';

/**
 * cutRenewal finds the revision and the record's own `renewedAt` in a message of exactly the
 * shape the scripts publish for encodeData's text — `["<rev>","<term>","<holder>","<step>",
 * "{\"leaseDurationMs\":…,\"acquiredAt\":…,\"renewedAt\":<integer>,…}"]` — or returns
 * undefined. Each piece is found by position, never by searching the holder or the metadata, so
 * text inside them cannot pass for either value; a `renewedAt` key anywhere after the first (a
 * later duplicate would win in JSON.parse) also returns undefined.
 */
export function cutRenewal(m: string): RenewalCut | undefined {
  if (m.charCodeAt(0) !== 91 || m.charCodeAt(1) !== Q) return undefined;
  let p = digitsEnd(m, 2);
  const revEnd = p;
  if (revEnd === 2 || !m.startsWith('","', p)) return undefined;
  p = digitsEnd(m, p + 3);
  if (!m.startsWith('","', p)) return undefined;
  // The holder: a JSON string, escapes skipped, up to its closing quote.
  for (p += 3; p < m.length && m.charCodeAt(p) !== Q; p += m.charCodeAt(p) === BACKSLASH ? 2 : 1);
  if (!m.startsWith('","', p) || !(m[p + 3] === '0' || m[p + 3] === '1') || !m.startsWith('","', p + 4)) return undefined;
  p += 7;
  if (!m.startsWith(DATA_HEAD, p)) return undefined;
  p = m.indexOf(',', p);
  if (p < 0 || !m.startsWith(ACQUIRED_KEY, p)) return undefined;
  p = m.indexOf(',', p + 1);
  if (p < 0 || !m.startsWith(RENEWED_KEY, p)) return undefined;
  const start = p + RENEWED_KEY.length;
  const end = integerEnd(m, start);
  // A JSON integer, followed by the next key.
  if (end === start || m.charCodeAt(end) !== 44) return undefined;
  const tail = m.slice(end);
  if (tail.includes('renewedAt')) return undefined;
  return { revision: m.slice(2, revEnd), renewedAt: Number(m.slice(start, end)), mid: m.slice(revEnd, start), tail };
}

