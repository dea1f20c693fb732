/**
 * runCoordinator's edges, in-process on the memory store: options checked when given, a key
 * that is not node-cron's refused with one clear error, and one elector per task name whose
 * fires are claimed in order and recorded in the cron ledger (done, or not run twice).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidConfigError } from '../../src/core/errors.js';
import { openStore } from '../../src/stores/registry.js';
import { readCronHead } from '../../src/jobs/cron-ledger.js';
import { runCoordinator } from '../../src/node-cron/index.js';

const FAST = { leaseDurationMs: 1000, renewDeadlineMs: 600, retryPeriodMs: 100 };

test('options are checked when given: an unknown key, a bad policy or poll interval is an InvalidConfigError naming it', () => {
  assert.throws(() => runCoordinator({ leaseDuration: 5 } as never), (e: unknown) => e instanceof InvalidConfigError && /leaseDuration/.test(e.message));
  assert.throws(() => runCoordinator({ missed: 'later' as never }), (e: unknown) => e instanceof InvalidConfigError && /missed must be "catch-up" or "skip", got "later"/.test(e.message));
  assert.throws(() => runCoordinator({ pollMs: 1 }), (e: unknown) => e instanceof InvalidConfigError && /pollMs/.test(e.message));
});

test('a key that is not "<name>:<ISO time>", or a name that makes a bad lock, is refused with one line', async () => {
  const store = await openStore('memory:nc-keys');
  const c = runCoordinator({ store, ...FAST });
  try {
    await assert.rejects(Promise.resolve(c.shouldRun('tick', 1000)), (e: unknown) => e instanceof InvalidConfigError && /"tick" is not a node-cron key/.test(e.message));
    await assert.rejects(Promise.resolve(c.shouldRun('bad name:2026-01-01T00:00:00.000Z', 1000)), (e: unknown) => e instanceof InvalidConfigError && /may contain only/.test(e.message));
  } finally {
    await c.close();
    await store.close();
  }
});

test('one instance: fires claimed in order under the term, recorded done; a slot is never granted twice', async () => {
  const store = await openStore('memory:nc-one');
  const c = runCoordinator({ store, ...FAST });
  try {
    const s1 = '2026-01-01T00:00:01.000Z';
    const s2 = '2026-01-01T00:00:02.000Z';
    const [a, b] = await Promise.all([c.shouldRun(`tick:${s1}`, 5000), c.shouldRun(`tick:${s2}`, 5000)]);
    assert.deepEqual([a, b], [true, true]);
    const claim = c.claimOf({ date: new Date(s2), task: { name: 'tick' } });
    assert.equal(claim?.lock, 'node-cron/tick');
    assert.equal(claim?.term, 1);
    assert.equal(claim?.signal.aborted, false);
    assert.equal(await c.shouldRun(`tick:${s1}`, 200), false, 'an older or equal slot is taken');
    await c.onComplete(`tick:${s1}`);
    await c.onComplete(`tick:${s2}`);
    const head = await readCronHead(store.ledger!, 'node-cron/tick');
    assert.deepEqual(head?.slots.map((s) => [s.slot, s.status, s.term]), [[s2, 'done', 1], [s1, 'done', 1]]);
  } finally {
    await c.close();
    await store.close();
  }
});
