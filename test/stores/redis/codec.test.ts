/**
 * The Redis store's codec: the hand-built `data` field is the same text JSON.stringify would
 * write, and a successful write's record, built from what was sent, equals the one decoded back
 * from the script's reply. Pure functions: no server needed (the store against a real Redis is
 * tested in redis.test.ts and redis-store.test.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LeaseWrite } from '../../../src/core/store.js';
import { MessageDecoder, cutRenewal, decodeLease, decodeMessage, decodeWriteReply, encodeData } from '../../../src/stores/redis/codec.js';

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

/** message is what the scripts publish for a record (cjson.encode of the five fields; JSON.stringify writes the same text here). */
function message(rev: string, term: string, holder: string, step: '0' | '1', next: LeaseWrite): string {
  return JSON.stringify([rev, term, holder, step, encodeData(next)]);
}

test('a message decoder answers exactly what decodeMessage does, renewal after renewal and for every other change', () => {
  const base: LeaseWrite = { holder: 'alice', newTerm: false, leaseDurationMs: 15000, acquiredAt: 1763700000000, renewedAt: 1763700000000, transitions: 2, stepDownRequested: false, metadata: Object.freeze({ hostname: 'h', pid: 7 }) };
  const at = (ms: number, extra: Partial<LeaseWrite> = {}) => ({ ...base, renewedAt: ms, ...extra });
  // Each step is a message on the lock's channel, and whether the decoder may take it as a renewal of the one before.
  const steps: [string, boolean][] = [
    [message('10', '3', 'alice', '0', at(1)), false],
    [message('11', '3', 'alice', '0', at(2_000)), true],
    [message('12', '3', 'alice', '0', at(4_000)), true],
    [message('13', '4', 'alice', '0', at(4_000)), false], // another term
    [message('14', '4', 'alicf', '0', at(6_000)), false], // another holder, same length
    [message('15', '4', 'alicf', '1', at(6_000)), false], // the step-down flag
    [message('16', '4', 'alicf', '1', at(8_000, { metadata: { hostname: 'h', pid: 8 } })), false], // other metadata
    [message('17', '4', 'alicf', '1', at(8_000, { transitions: 3 })), false],
    [message('18', '4', 'alicf', '1', at(8_000, { leaseDurationMs: 14000 })), false],
    [message('19', '4', 'alicf', '1', at(8_000, { acquiredAt: 1 })), false],
    [message('20', '4', 'alicf', '1', at(10_000)), false], // back to the metadata two messages ago: not the last one
    [message('21', '4', 'alicf', '1', at(12_000)), true],
    ['null', false],
    [message('22', '5', 'x","0","{\\"renewedAt\\":1,', '0', at(1)), false], // a holder that looks like the fields after it
    [message('23', '5', 'x","0","{\\"renewedAt\\":2,', '0', at(1)), false],
    [message('24', '5', 'x","0","{\\"renewedAt\\":2,', '0', at(2)), true],
    [message('25', '5', 'bob', '0', at(3, { metadata: { renewedAt: 1 } })), false], // metadata naming renewedAt: always decoded in full
    [message('26', '5', 'bob', '0', at(4, { metadata: { renewedAt: 2 } })), false],
    [message('27', '5', 'bob', '0', at(5, { metadata: { renewedAt: 2 } })), false],
    [JSON.stringify(['28', '5', 'bob', '0', '{"leaseDurationMs":1,"acquiredAt":1,"renewedAt":05,"transitions":0,"metadata":{}}']), false], // not JSON
    [message('29', '5', 'bob', '0', at(Number.NaN)), false], // renewedAt null
    [message('30', '5', 'bob', '0', at(-7)), false],
    [message('31', '5', 'bob', '0', at(-8)), true],
    ['not json', false],
  ];
  const decoder = new MessageDecoder('lk');
  let prev: ReturnType<MessageDecoder['decode']>;
  for (const [m, renewal] of steps) {
    const got = decoder.decode(m);
    assert.deepEqual(got, decodeMessage('lk', m), m);
    if (got) assert.ok(Object.isFrozen(got));
    // A renewal taken without parsing keeps the last record's metadata object; a full decode makes a new one.
    assert.equal(!!got && !!prev && got.metadata === prev.metadata, renewal, `${m}: taken as a renewal`);
    prev = got;
  }
});

test('cutRenewal finds the record\'s own renewedAt, never text inside the holder or the metadata', () => {
  const next: LeaseWrite = { holder: 'h', newTerm: false, leaseDurationMs: 15000, acquiredAt: 5, renewedAt: 1234, transitions: 0, stepDownRequested: false, metadata: Object.freeze({ note: ',\\"renewedAt\\":99,' }) };
  assert.equal(cutRenewal(message('7', '1', 'h', '0', next)), undefined, 'renewedAt named again after it');
  const cut = cutRenewal(message('7', '1', '\\"renewedAt\\":99,', '0', { ...next, metadata: {} }));
  assert.equal(cut?.revision, '7');
  assert.equal(cut?.renewedAt, 1234);
  assert.equal(cutRenewal('["7","1","h","0","{}"]'), undefined);
});
