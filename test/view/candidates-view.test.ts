/**
 * candidatesView (server/candidates-view.ts): who is shown live (a beat within 2.5 refresh
 * periods of this host's clock, not left), and who would be preferred under each rule — the
 * leader kept on a tie, since a rule moves leadership only to a strictly higher rank.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CandidateInfo } from '../../src/core/candidates.js';
import { candidatesView, renderCandidates } from '../../src/view/candidates-view.js';

const NOW = Date.parse('2026-11-27T12:00:00Z');
const iso = (agoMs: number) => new Date(NOW - agoMs).toISOString();
const entry = (identity: string, o: Partial<CandidateInfo> = {}): CandidateInfo => ({
  identity, instance: `${identity}-i`, host: `${identity}.internal`, pid: 1, startedAt: iso(60_000), beat: 3, at: iso(1_000), refreshMs: 10_000, ...o,
});

test('live: beating within 2.5 refresh periods and not left; the leader is marked', () => {
  const v = candidatesView('L', [entry('a'), entry('b', { at: iso(26_000) }), entry('c', { left: 'stopped' })], 'a', NOW);
  assert.deepEqual(v.candidates.map((c) => [c.identity, c.live, c.leader]), [['a', true, true], ['b', false, false], ['c', false, false]]);
  assert.equal(v.candidates[0]!.lastSeenAgoMs, 1_000);
  assert.deepEqual(v.preferred, { onStop: null, newest: 'a', oldest: 'a', priority: 'a' }, 'only live candidates are preferred');
});

test('preferred: the highest rank per rule; the leader stays on a tie; onStop is the best other one', () => {
  const v = candidatesView('L', [
    entry('a', { appVersion: '2.0.0', priority: 1, startedAt: iso(300_000) }),
    entry('b', { appVersion: '2.0.0', priority: 5, startedAt: iso(100_000) }),
    entry('c', { appVersion: '1.9.9', startedAt: iso(10_000) }),
  ], 'a', NOW);
  assert.deepEqual(v.preferred, { onStop: 'b', newest: 'a', oldest: 'a', priority: 'b' });
  const free = candidatesView('L', [entry('a', { appVersion: '2.0.0', startedAt: iso(300_000) }), entry('b', { appVersion: '2.0.0', startedAt: iso(100_000) })], null, NOW);
  assert.equal(free.preferred.newest, 'b', 'without a leader: the top of the order (a tie goes to the latest start)');
});

test('renderCandidates: live ones listed, the others counted, preferred on one line; nothing without entries', () => {
  const text = renderCandidates(candidatesView('L', [entry('a', { appVersion: '1.0.0', labels: { zone: 'z1' } }), entry('b', { left: 'stopped' })], 'a', NOW)).join('\n');
  assert.match(text, /candidates: 1 live, 1 left or not seen lately/);
  assert.match(text, /\* a on a\.internal pid 1; version 1\.0\.0; zone=z1; started .*; last seen 1s ago/);
  assert.match(text, /preferred: newest a, oldest a, priority a; a graceful stop of the leader hands over to nobody/);
  assert.deepEqual(renderCandidates(candidatesView('L', [], null, NOW)), []);
});
