import type { HolderMetadata, LeaseRecord, LeaseWrite } from './store.js';

/**
 * The three writes an elector sends, spelt out once: an acquisition (a new term), a renewal of
 * a record as it is, and a release (no holder, same term).
 */

/** acquisitionWrite acquires for `holder`; `prior` is the record it replaces, if seen. */
export function acquisitionWrite(holder: string, leaseDurationMs: number, wallMs: number, prior: LeaseRecord | null, metadata: HolderMetadata): LeaseWrite {
  return {
    holder,
    newTerm: true,
    leaseDurationMs,
    acquiredAt: wallMs,
    renewedAt: wallMs,
    transitions: (prior?.transitions ?? 0) + 1,
    stepDownRequested: false,
    metadata,
  };
}

/** renewalWrite renews `record` as it is, with a fresh renewedAt. */
export function renewalWrite(record: LeaseRecord, wallMs: number): LeaseWrite {
  return {
    holder: record.holder,
    newTerm: false,
    leaseDurationMs: record.leaseDurationMs,
    acquiredAt: record.acquiredAt,
    renewedAt: wallMs,
    transitions: record.transitions,
    stepDownRequested: record.stepDownRequested,
    metadata: record.metadata,
  };
}

/** releaseWrite frees `record`: no holder, no step-down flag, the term kept. */
export function releaseWrite(record: LeaseRecord, wallMs: number): LeaseWrite {
  return { ...renewalWrite(record, wallMs), holder: null, stepDownRequested: false };
}
