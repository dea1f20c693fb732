/**
 * Rules 1 and 2 of the elector as a table (src/core/claim-decision.ts): what a standby does with
 * the record it observed — write now (expecting which revision) or wait, and how long.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decideClaim, SERVER_ROUNDING_MS, type ClaimContext } from '../../src/core/claim-decision.js';
import type { LeaseRecord } from '../../src/core/store.js';

const record = (holder: string | null, revision = 'r7'): LeaseRecord => ({
  lock: 'job',
  holder,
  term: 3,
  revision,
  leaseDurationMs: 1000,
  acquiredAt: 0,
  renewedAt: 0,
  transitions: 1,
  stepDownRequested: false,
  metadata: {},
});

const ctx = (over: Partial<ClaimContext> = {}): ClaimContext => ({
  nowMs: 5000,
  observedAtMs: 5000,
  serverExpiry: false,
  hearsRenewals: false,
  orphanOfOurs: false,
  retryPeriodMs: 200,
  ...over,
});

test('rule 1: an absent record is created; a released one, or an orphan of ours, is taken at its revision at once', () => {
  assert.deepEqual(decideClaim(null, ctx()), { kind: 'write', expected: null });
  assert.deepEqual(decideClaim(record(null), ctx()), { kind: 'write', expected: 'r7' });
  assert.deepEqual(decideClaim(record('me'), ctx({ orphanOfOurs: true })), { kind: 'write', expected: 'r7' });
  // Rule 1 holds on server-expired stores too.
  assert.deepEqual(decideClaim(record(null), ctx({ serverExpiry: true })), { kind: 'write', expected: 'r7' });
});

test('rule 2, our own count: a held record is taken only once its revision stayed unchanged for its lease, timed from our sight of it', () => {
  assert.deepEqual(decideClaim(record('a'), ctx({ observedAtMs: 5000, nowMs: 5000 })), { kind: 'waitForExpiry', ms: 1000 });
  assert.deepEqual(decideClaim(record('a'), ctx({ observedAtMs: 5000, nowMs: 5999 })), { kind: 'waitForExpiry', ms: 1 });
  assert.deepEqual(decideClaim(record('a'), ctx({ observedAtMs: 5000, nowMs: 6000 })), { kind: 'write', expected: 'r7' });
  // The record's own lease duration counts, not ours.
  assert.deepEqual(decideClaim({ ...record('a'), leaseDurationMs: 3000 }, ctx({ observedAtMs: 5000, nowMs: 6000 })), { kind: 'waitForExpiry', ms: 2000 });
});

test('rule 2, server expiry with every renewal heard: a create-if-absent once the server must have dropped the record, once per revision', () => {
  const heard = ctx({ serverExpiry: true, hearsRenewals: true, observedAtMs: 5000 });
  assert.deepEqual(decideClaim(record('a'), { ...heard, nowMs: 5500 }), { kind: 'waitForExpiry', ms: 500 + SERVER_ROUNDING_MS });
  assert.deepEqual(decideClaim(record('a'), { ...heard, nowMs: 6000 + SERVER_ROUNDING_MS }), { kind: 'write', expected: null, claimsRevision: 'r7' });
  // Tried at this revision already: wait for the server to remove it instead of trying again.
  const tried = decideClaim(record('a'), { ...heard, nowMs: 6100, claimedRevision: 'r7' });
  assert.equal(tried.kind, 'waitForRemoval');
  // A new revision (a renewal heard) is claimable again at its own expiry.
  assert.deepEqual(decideClaim(record('a', 'r8'), { ...heard, nowMs: 6100, claimedRevision: 'r7', observedAtMs: 6100 }), { kind: 'waitForExpiry', ms: 1000 + SERVER_ROUNDING_MS });
});

test('rule 2, server expiry without renewals heard: never written over; look again after lease + retry, counted afresh once outlived', () => {
  const server = ctx({ serverExpiry: true, observedAtMs: 5000 });
  assert.deepEqual(decideClaim(record('a'), { ...server, nowMs: 5000 }), { kind: 'waitForRemoval', ms: 1200, lookFromMs: 5000 });
  assert.deepEqual(decideClaim(record('a'), { ...server, nowMs: 5700 }), { kind: 'waitForRemoval', ms: 500, lookFromMs: 5000 });
  // Outlived the wait (etcd keepalives keep the revision): the next look counts from now, no write.
  assert.deepEqual(decideClaim(record('a'), { ...server, nowMs: 6200 }), { kind: 'waitForRemoval', ms: 1200, lookFromMs: 6200 });
  assert.deepEqual(decideClaim(record('a'), { ...server, nowMs: 99_000 }), { kind: 'waitForRemoval', ms: 1200, lookFromMs: 99_000 });
});
