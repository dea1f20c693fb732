/**
 * The lease record as one JSON text, written once for every store that keeps a record as a
 * value (the generic compare-and-set store, and any store that wants the same layout):
 *
 *   {"v":1,"holder":"a","term":7,"leaseDurationMs":15000,"acquiredAt":…,"renewedAt":…,
 *    "transitions":3,"stepDown":false,"tv":"42","metadata":{…}}
 *
 * `tv` (optional) is the term counter's version right after this term was reserved in it: the
 * generic store's hint for the next acquisition (see cas-store.ts, "The term"). Readers that do
 * not know it ignore it.
 *
 * The revision is not inside the text: it is the backend's own version of the value, so it
 * changes on every write without the writer choosing it.
 */
import { metadataJson } from '../../core/metadata-json.js';
import type { HolderMetadata, LeaseRecord, LeaseWrite } from '../../core/store.js';

/** encodeRecord is the stored text of `next` with its term (and the term counter's version `tv`, if given). */
export function encodeRecord(next: LeaseWrite, term: number, tv?: string): string {
  // Built around the cached metadata JSON: a renewal's metadata never changes.
  return (
    `{"v":1,"holder":${JSON.stringify(next.holder)},"term":${num(term)},"leaseDurationMs":${num(next.leaseDurationMs)},` +
    `"acquiredAt":${num(Math.round(next.acquiredAt))},"renewedAt":${num(Math.round(next.renewedAt))},` +
    `"transitions":${num(next.transitions)},"stepDown":${next.stepDownRequested ? 'true' : 'false'},` +
    `${tv === undefined ? '' : `"tv":${JSON.stringify(tv)},`}"metadata":${metadataJson(next.metadata)}}`
  );
}

function num(x: number): string {
  return Number.isFinite(x) ? String(x) : 'null';
}

interface Stored {
  holder?: string | null;
  term?: number;
  leaseDurationMs?: number;
  acquiredAt?: number;
  renewedAt?: number;
  transitions?: number;
  stepDown?: boolean;
  tv?: unknown;
  metadata?: HolderMetadata;
}

/**
 * decodeRecord reads a stored text back. Text that is not a record (hand-edited, truncated) is
 * read as a free lease with term 0, so it can be taken over and the next term still comes from
 * the term counter, never from the broken text.
 */
export function decodeRecord(lock: string, text: string, revision: string): LeaseRecord {
  return decodeStored(lock, text, revision).record;
}

/** decodeStored is decodeRecord with the term counter's version the text carries (`tv`), if any. */
export function decodeStored(lock: string, text: string, revision: string): { record: LeaseRecord; tv?: string } {
  let s: Stored = {};
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed && typeof parsed === 'object') s = parsed as Stored;
  } catch {
    // see above
  }
  const record: LeaseRecord = Object.freeze({
    lock,
    holder: typeof s.holder === 'string' ? s.holder : null,
    term: Number.isSafeInteger(s.term) ? s.term! : 0,
    leaseDurationMs: Number(s.leaseDurationMs ?? 0),
    acquiredAt: Number(s.acquiredAt ?? 0),
    renewedAt: Number(s.renewedAt ?? 0),
    transitions: Number(s.transitions ?? 0),
    stepDownRequested: s.stepDown === true,
    metadata: Object.freeze({ ...(s.metadata ?? {}) }),
    revision,
  });
  return typeof s.tv === 'string' && s.tv !== '' ? { record, tv: s.tv } : { record };
}

/** recordOf builds the record a successful write produced, without re-reading or re-parsing it. */
export function recordOf(lock: string, next: LeaseWrite, term: number, revision: string): LeaseRecord {
  return Object.freeze({
    lock,
    holder: next.holder,
    term,
    leaseDurationMs: next.leaseDurationMs,
    acquiredAt: next.acquiredAt,
    renewedAt: next.renewedAt,
    transitions: next.transitions,
    stepDownRequested: next.stepDownRequested,
    // The elector's metadata is frozen: pass it through (its JSON stays cached).
    metadata: Object.isFrozen(next.metadata) ? next.metadata : Object.freeze({ ...next.metadata }),
    revision,
  });
}
