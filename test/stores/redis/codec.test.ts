/**
 * The Redis store's codec: the hand-built `data` field is the same text JSON.stringify would
 * write, and a successful write's record, built from what was sent, equals the one decoded back
 * from the script's reply. Pure functions: no server needed (the store against a real Redis is
 * tested in redis.test.ts and redis-store.test.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LeaseWrite } from '../../../src/core/store.js';
import { decodeLease, decodeWriteReply, encodeData } from '../../../src/stores/redis/codec.js';

const writes: LeaseWrite[] = [
  { holder: 'a', newTerm: false, leaseDurationMs: 15000, acquiredAt: 1763700000123.4, renewedAt: 1763700002123.6, transitions: 3, stepDownRequested: false, metadata: Object.freeze({ hostname: 'h"1', pid: 7, nested: { x: [1, 'é'] } }) },
  { holder: 'b', newTerm: true, leaseDurationMs: 2000, acquiredAt: 0, renewedAt: 0, transitions: 0, stepDownRequested: true, metadata: { mutable: true } },
  { holder: 'c', newTerm: false, leaseDurationMs: Number.NaN, acquiredAt: Number.POSITIVE_INFINITY, renewedAt: 5, transitions: 1, stepDownRequested: false, metadata: {} },
];

test('encodeData writes what JSON.stringify would', () => {
  for (const next of writes) {
    const expected = JSON.stringify({
      leaseDurationMs: next.leaseDurationMs,
      acquiredAt: Math.round(next.acquiredAt),
      renewedAt: Math.round(next.renewedAt),
      transitions: next.transitions,
      metadata: next.metadata ?? {},
    });
    assert.equal(encodeData(next), expected);
    assert.equal(encodeData(next), expected, 'and again, from the cache');
  }
});

test('a successful write\'s record equals the record decoded from the reply', () => {
  for (const next of writes) {
    const reply = [1, '42', '9', next.holder, next.stepDownRequested ? '1' : '0', encodeData(next)];
    const r = decodeWriteReply('lk', next, reply);
    assert.ok(r.ok);
    const decoded = decodeLease('lk', ['42', '9', next.holder!, next.stepDownRequested ? '1' : '0', encodeData(next)], next.holder);
    assert.deepEqual(r.record, decoded);
    assert.ok(Object.isFrozen(r.record));
  }
});
