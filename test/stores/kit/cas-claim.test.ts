/**
 * The generic compare-and-set store's claim (src/stores/kit/cas-store.ts, "The term"): a standby
 * that already holds the record at the revision it claims (a notification brought it) reserves
 * its term with one compare-and-set at the counter version the record carries — no read — so in
 * a herd each loser makes one backend call and the winner two. A hint the counter has moved past
 * is refused once and the next claim reads; terms only grow throughout. Counted on the memory
 * backend, one counting wrapper per handle.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CasStore } from '../../../src/stores/kit/cas-store.js';
import { termKey, type CasBackend } from '../../../src/stores/kit/backend.js';
import { MemoryBackend, MemoryStore } from '../../../src/stores/memory/index.js';
import { acquisitionWrite, releaseWrite } from '../../../src/core/lease-writes.js';
import type { LeaseRecord, WriteResult } from '../../../src/core/store.js';

type Op = 'get' | 'create' | 'replace' | 'list' | 'replaceMany' | 'renewValues';

/** counted wraps one handle's backend and tallies its calls by operation and key family. */
function counted(data: MemoryBackend): { store: CasStore; calls: string[] } {
  const inner = (new MemoryStore(data) as unknown as { cas: CasBackend }).cas;
  const calls: string[] = [];
  const backend = new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || !['get', 'create', 'replace', 'list', 'replaceMany', 'renewValues'].includes(prop as Op)) return value;
      return (key: unknown, ...rest: unknown[]) => {
        calls.push(`${String(prop)} ${typeof key === 'string' ? key.split('/')[0] : 'batch'}`);
        return (value as (...a: unknown[]) => unknown).call(target, key, ...rest);
      };
    },
  });
  return { store: new CasStore(backend), calls };
}

const LOCK = 'herd';
const write = (who: string, prior: LeaseRecord | null) => acquisitionWrite(who, 10_000, Date.now(), prior, {});
const settle = () => new Promise((r) => setTimeout(r, 10));

test('a herd claims a released lease with one counter compare-and-set each and no read; the winner writes twice', async () => {
  const data = new MemoryBackend();
  const leader = counted(data);
  const standbys = Array.from({ length: 6 }, () => counted(data));
  const seen: (LeaseRecord | null | undefined)[] = standbys.map(() => undefined);
  standbys.forEach((s, i) => s.store.watch!(LOCK, (r) => (seen[i] = r)));

  let won = await leader.store.write(LOCK, null, write('leader', null));
  assert.ok(won.ok);
  let term = won.record.term;
  for (let round = 0; round < 3; round++) {
    const holder = won.ok ? won.record : assert.fail('no holder');
    const released = await leader.store.write(LOCK, holder.revision, releaseWrite(holder, Date.now()));
    assert.ok(released.ok);
    await settle();
    assert.ok(seen.every((r) => r?.revision === released.record.revision), 'every standby heard the release');
    for (const s of standbys) s.calls.length = 0;
    const results: WriteResult[] = await Promise.all(standbys.map((s, i) => s.store.write(LOCK, released.record.revision, write(`s${i}`, released.record))));
    const winners = results.filter((r) => r.ok);
    assert.equal(winners.length, 1, 'exactly one standby wins');
    const all = standbys.flatMap((s) => s.calls);
    assert.equal(all.filter((c) => c.startsWith('get')).length, 0, `no reads: ${all.join(', ')}`);
    assert.equal(all.length, standbys.length + 1, `one call per loser, two for the winner: ${all.join(', ')}`);
    const w = winners[0]!;
    assert.ok(w.ok && w.record.term > term, 'the term grew');
    term = w.ok ? w.record.term : term;
    // The winner leads next round; its handle releases.
    const index = results.indexOf(w);
    Object.assign(leader, { store: standbys[index]!.store });
    won = w;
  }
});

test('a hint the counter has moved past is refused once; the next claim reads and still takes a higher term', async () => {
  const data = new MemoryBackend();
  const a = counted(data);
  const b = counted(data);
  b.store.watch!(LOCK, () => {});
  const first = await a.store.write(LOCK, null, write('a', null));
  assert.ok(first.ok);
  const released = await a.store.write(LOCK, first.record.revision, releaseWrite(first.record, Date.now()));
  assert.ok(released.ok);
  await settle();
  // Someone reserved a term and never wrote the lease (it died between the two writes).
  const counter = data.items.get(termKey(LOCK))!;
  data.set(termKey(LOCK), String(Number(counter.value) + 5));
  b.calls.length = 0;
  const refused = await b.store.write(LOCK, released.record.revision, write('b', released.record));
  assert.deepEqual(refused, { ok: false });
  assert.deepEqual(b.calls, ['replace term'], 'the refused hint cost one call');
  // Reading the same record again (a poll, a notification) must not bring the refused hint back:
  // the lease carries it until the next acquisition, and every claim would be refused forever.
  assert.equal((await b.store.read(LOCK))?.revision, released.record.revision);
  b.calls.length = 0;
  const again = await b.store.write(LOCK, released.record.revision, write('b', released.record));
  assert.ok(again.ok);
  assert.equal(again.record.term, first.record.term + 6, 'past the skipped reservation');
  assert.deepEqual(b.calls.filter((c) => c.startsWith('get')).sort(), ['get lease', 'get term'], 'the second claim read');

  // A deleted counter: the hint is refused, the next claim recreates it above the lease's term.
  const out = await b.store.write(LOCK, again.record.revision, releaseWrite(again.record, Date.now()));
  assert.ok(out.ok);
  data.removeKey(termKey(LOCK));
  assert.deepEqual(await b.store.write(LOCK, out.record.revision, write('b', out.record)), { ok: false });
  const recreated = await b.store.write(LOCK, out.record.revision, write('b', out.record));
  assert.ok(recreated.ok && recreated.record.term === again.record.term + 1);
});

test('records written before the hint existed (no tv) are claimed as before: read, reserve, write', async () => {
  const data = new MemoryBackend();
  const a = counted(data);
  const first = await a.store.write(LOCK, null, write('a', null));
  assert.ok(first.ok);
  // Rewrite the stored text without its tv, as an older baton would have written it.
  const stored = data.items.get(`lease/${LOCK}`)!;
  const version = data.set(`lease/${LOCK}`, stored.value.replace(/"tv":"[^"]*",/, ''));
  const b = counted(data);
  const old = await b.store.read(LOCK);
  assert.equal(old?.revision, version);
  b.calls.length = 0;
  const taken = await b.store.write(LOCK, version, write('b', old));
  assert.ok(taken.ok && taken.record.term === first.record.term + 1);
  assert.ok(b.calls.includes('get term'), `read the counter: ${b.calls.join(', ')}`);
  // Its own record carries the hint again.
  assert.match(data.items.get(`lease/${LOCK}`)!.value, /"tv":"\d+"/);
});
