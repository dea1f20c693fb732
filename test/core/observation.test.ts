// The observation rule (core/observation.ts): a version is timed from when this process first
// saw it, on its own monotonic clock, and a change of version starts the count again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Sightings, sight, unchangedForMs } from '../../src/core/observation.js';

test('a sighting continues while the version is the same and starts again when it changes', () => {
  const a = sight(undefined, 'r1', 100);
  assert.deepEqual(a, { version: 'r1', sinceMs: 100 });
  assert.equal(sight(a, 'r1', 900), a, 'the same version: the same sighting');
  assert.equal(unchangedForMs(sight(a, 'r1', 900), 900), 800);
  const b = sight(a, 'r2', 900);
  assert.deepEqual(b, { version: 'r2', sinceMs: 900 });
  assert.equal(unchangedForMs(b, 950), 50);
});

test('Sightings: per key; keepOnly forgets the unlisted; restartAll counts everything from now', () => {
  const s = new Sightings();
  s.see('ann', '1', 0);
  s.see('ben', '7', 0);
  assert.equal(unchangedForMs(s.see('ann', '1', 500), 500), 500);
  assert.equal(unchangedForMs(s.see('ben', '8', 500), 500), 0, 'ben beat');
  s.keepOnly(new Set(['ann']));
  assert.equal(s.get('ben'), undefined);
  s.restartAll(2000);
  assert.equal(unchangedForMs(s.see('ann', '1', 2100), 2100), 100, 'a gap in looking proves nothing');
});
