/**
 * Membership liveness on a fake clock: a heartbeat seen unchanged for a lease duration, while this
 * member kept looking, means its member is gone; but time during which this member could not look
 * (a store outage, a pause) does not count — after such a gap every clock starts again, so the
 * first listing after a store outage longer than a lease does not find every other member dead.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Membership } from '../../src/shards/membership.js';
import { MemoryBackend, MemoryStore } from '../../src/stores/memory/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';

const LEASE_MS = 1000;

function pair() {
  const data = new MemoryBackend();
  const clock = new FakeClock();
  const me = new Membership(new MemoryStore(data).ledger!, 'g', 4, 'me', LEASE_MS, clock);
  const other = new Membership(new MemoryStore(data).ledger!, 'g', 4, 'other', LEASE_MS, clock);
  return { me, other, clock };
}

test('membership: a heartbeat unchanged for a lease while this member looked every 250 ms is gone', async () => {
  const { me, other, clock } = pair();
  await me.heartbeat();
  await other.heartbeat();
  assert.deepEqual((await me.observe()).live, ['me', 'other']);
  for (let t = 250; t < LEASE_MS; t += 250) {
    await clock.advance(250);
    await me.heartbeat();
    assert.deepEqual((await me.observe()).live, ['me', 'other'], `still live at ${t} ms`);
  }
  await clock.advance(250);
  await me.heartbeat();
  assert.deepEqual((await me.observe()).live, ['me'], 'gone once unchanged for a whole lease');
});

test('membership: after this member could not look for longer than a lease, the others are not found dead at once', async () => {
  const { me, other, clock } = pair();
  await me.heartbeat();
  await other.heartbeat();
  assert.deepEqual((await me.observe()).live, ['me', 'other']);
  await clock.advance(3 * LEASE_MS); // a store outage: nobody beats, nobody looks
  await me.heartbeat();
  assert.deepEqual((await me.observe()).live, ['me', 'other'], 'the other has had no chance to beat since the outage');
  await other.heartbeat();
  await clock.advance(250);
  assert.deepEqual((await me.observe()).live, ['me', 'other']);
  // It is found dead only if it then stays silent for a lease while this member keeps looking.
  for (let i = 0; i < 4; i++) {
    await clock.advance(250);
    await me.observe();
  }
  assert.deepEqual((await me.observe()).live, ['me']);
});
