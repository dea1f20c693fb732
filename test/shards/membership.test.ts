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

test('membership: joiners are added once the same ones were seen for the settle time, all in one assignment; removals do not wait', async () => {
  const data = new MemoryBackend();
  const clock = new FakeClock();
  const RETRY_MS = 250;
  const member = (id: string) => new Membership(new MemoryStore(data).ledger!, 'g', 8, id, LEASE_MS, clock, RETRY_MS);
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(member) as [Membership, Membership, Membership, Membership];
  const step = async (who: Membership) => {
    const current = await who.readAssignment();
    await who.heartbeat();
    return who.advance(current, await who.observe());
  };
  // a starts alone: no assignment until it has seen the same members for a retry period.
  assert.deepEqual((await step(a)).members, []);
  assert.equal(await a.readAssignment(), null);
  // b starts meanwhile: the joiners changed, so the wait starts again.
  await clock.advance(100);
  await b.heartbeat();
  assert.deepEqual((await step(a)).members, []);
  await clock.advance(RETRY_MS);
  await b.heartbeat();
  assert.deepEqual((await step(a)).members, ['a', 'b'], 'both in the first assignment');
  // c and d join a running group: added together, in one new version, a retry period after both were seen.
  await c.heartbeat();
  await d.heartbeat();
  await clock.advance(RETRY_MS / 2);
  for (const m of [b, c, d]) await m.heartbeat();
  assert.deepEqual((await step(a)).members, ['a', 'b']);
  await clock.advance(RETRY_MS);
  for (const m of [b, c, d]) await m.heartbeat();
  assert.deepEqual((await step(a)).members, ['a', 'b', 'c', 'd']);
  assert.deepEqual((await a.readAssignment())!.members, ['a', 'b', 'c', 'd'], 'the record has both joiners (it still had neither a step before)');
  // d stops beating: removed as soon as it is found dead, with no settle time.
  for (let t = 0; t < LEASE_MS; t += RETRY_MS) {
    await clock.advance(RETRY_MS);
    for (const m of [b, c]) await m.heartbeat();
    await step(a);
  }
  assert.deepEqual((await step(a)).members, ['a', 'b', 'c']);
});

test('membership: joiners that keep changing are added a lease after the first was seen', async () => {
  const data = new MemoryBackend();
  const clock = new FakeClock();
  const RETRY_MS = 250;
  const a = new Membership(new MemoryStore(data).ledger!, 'g', 8, 'a', LEASE_MS, clock, RETRY_MS);
  const others: Membership[] = [];
  let added: readonly string[] = [];
  // A new member every 200 ms: the set of joiners is never the same for a retry period.
  for (let i = 0; added.length === 0 && i < 20; i++) {
    others.push(new Membership(new MemoryStore(data).ledger!, 'g', 8, `m${i}`, LEASE_MS, clock, RETRY_MS));
    for (const m of others) await m.heartbeat();
    const current = await a.readAssignment();
    await a.heartbeat();
    added = (await a.advance(current, await a.observe())).members;
    if (added.length === 0) await clock.advance(200);
  }
  assert.ok(added.length > 1, 'added in the end');
  assert.equal(clock.monotonicMs() >= LEASE_MS && clock.monotonicMs() < LEASE_MS + 200, true, `added at ${clock.monotonicMs()} ms`);
});
