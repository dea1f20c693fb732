/**
 * Text helpers for change feeds that hear renewals as whole records (Redis messages, PostgreSQL
 * NOTIFY payloads). A process leading many locks hears each of its own renewals every cycle; a
 * store's decoder compares a message with the last one of its lock as text and, when only the
 * revision and `renewedAt` differ, builds the record without parsing (see each store's decoder).
 * Not exported from the kit: internal to the stores of this package.
 */
import type { LeaseRecord } from '../../core/store.js';

/**
 * flat is a copy of `s` as one flat string. A slice refers into its whole message and compares
 * several times slower with ===; startsWith is slower still. JSON keeps every string exactly,
 * lone surrogates included.
 */
export function flat(s: string): string {
  return JSON.parse(JSON.stringify(s)) as string;
}

/** digitsEnd is the end of the run of decimal digits at `from` (`from` when there is none). */
export function digitsEnd(m: string, from: number): number {
  let p = from;
  for (let c = m.charCodeAt(p); c >= 48 && c <= 57; c = m.charCodeAt(++p));
  return p;
}

/** integerEnd is the end of the JSON integer -?(0|[1-9][0-9]*) at `from`, or `from` if there is none. */
export function integerEnd(m: string, from: number): number {
  const p = m.charCodeAt(from) === 45 ? from + 1 : from;
  const first = m.charCodeAt(p);
  if (first === 48) return p + 1;
  return first >= 49 && first <= 57 ? digitsEnd(m, p) : from;
}

/** integerValue is Number(m.slice(start, end)) for a JSON integer there, added up without a slice when short enough to be exact. */
export function integerValue(m: string, start: number, end: number): number {
  if (end - start > 15) return Number(m.slice(start, end));
  const negative = m.charCodeAt(start) === 45;
  let n = 0;
  for (let p = negative ? start + 1 : start; p < end; p++) n = n * 10 + (m.charCodeAt(p) - 48);
  return negative ? -n : n;
}

/**
 * renewedAs is `r` with a new renewedAt and revision, for a record a store's codec built (its
 * ten fields, nothing else): a literal of one shape, cheaper than spreading a frozen object.
 */
export function renewedAs(r: LeaseRecord, renewedAt: number, revision: string): LeaseRecord {
  return Object.freeze({
    lock: r.lock,
    holder: r.holder,
    term: r.term,
    leaseDurationMs: r.leaseDurationMs,
    acquiredAt: r.acquiredAt,
    renewedAt,
    transitions: r.transitions,
    stepDownRequested: r.stepDownRequested,
    metadata: r.metadata,
    revision,
  });
}
