/**
 * runOnce on the memory store (fast): one run per key however many callers, the outcome kept
 * in the ledger for later callers, failures never retried without `rerun`, `wait: false`,
 * `timeoutMs`, and a takeover after a runner that died while holding the lock.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryStore } from '../../src/stores/memory/index.js';
import { LeaderElector } from '../../src/core/elector.js';
import { InvalidConfigError, LeaseLostError } from '../../src/core/errors.js';
import { defaultOnceLock, readOnceRecord, runOnce, type OnceRecord } from '../../src/jobs/once.js';
import { onceLedgerKey } from '../../src/jobs/ledger-keys.js';

const FAST = { leaseDurationMs: 600, renewDeadlineMs: 400, retryPeriodMs: 100 };
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('runOnce', { concurrency: true }, () => {
  test('three concurrent callers: one runs, the others wait and get its recorded outcome', async () => {
    const backend = new MemoryStore().backend;
    let calls = 0;
    const results = await Promise.all(
      ['a', 'b', 'c'].map((identity) =>
        runOnce(new MemoryStore(backend), 'release-1.2.3', { identity, ...FAST }, async (ctx) => {
          calls++;
          assert.equal(ctx.env.BATON_KEY, 'release-1.2.3');
          assert.equal(ctx.env.BATON_TERM, String(ctx.term));
          await delay(300);
          return 'migrated';
        }),
      ),
    );
    assert.equal(calls, 1);
    assert.deepEqual(results.map((r) => r.outcome).sort(), ['ran', 'recorded', 'recorded']);
    const ran = results.find((r) => r.outcome === 'ran')!;
    assert.equal(ran.value, 'migrated');
    for (const r of results) {
      assert.equal(r.record?.status, 'done');
      assert.equal(r.record?.exitCode, 0);
      assert.equal(r.record?.identity, ran.record!.identity);
    }
    // A caller that comes later — a fresh instance — reads the record and does not run.
    const later = await runOnce(new MemoryStore(backend), 'release-1.2.3', FAST, () => {
      calls++;
    });
    assert.equal(later.outcome, 'recorded');
    assert.equal(calls, 1);
  });

  test('a failure is recorded and never retried silently; rerun runs it again, once', async () => {
    const store = new MemoryStore();
    let calls = 0;
    const failed = await runOnce(store, 'm-7', FAST, () => {
      calls++;
      throw Object.assign(new Error('relation exists'), { exitCode: 4 });
    });
    assert.equal(failed.outcome, 'ran');
    assert.deepEqual([failed.record?.status, failed.record?.exitCode, failed.error], ['failed', 4, 'relation exists']);
    const again = await runOnce(store, 'm-7', FAST, () => void calls++);
    assert.deepEqual([again.outcome, again.record?.status, calls], ['recorded', 'failed', 1]);
    const rerun = await runOnce(store, 'm-7', { ...FAST, rerun: true }, () => void calls++);
    assert.deepEqual([rerun.outcome, rerun.record?.status, rerun.record?.attempt, rerun.record?.rerunOf, calls], ['ran', 'done', 2, 1, 2]);
    assert.deepEqual(rerun.record?.previous.map((p) => [p.attempt, p.status]), [[1, 'failed']]);
    // rerun only reruns a failure.
    const noop = await runOnce(store, 'm-7', { ...FAST, rerun: true }, () => void calls++);
    assert.deepEqual([noop.outcome, calls], ['recorded', 2]);
  });

  test('concurrent reruns of one failure run it once', async () => {
    const backend = new MemoryStore().backend;
    await runOnce(new MemoryStore(backend), 'k', FAST, () => {
      throw new Error('first');
    });
    let calls = 0;
    const results = await Promise.all(
      [1, 2, 3].map(() =>
        runOnce(new MemoryStore(backend), 'k', { ...FAST, rerun: true }, async () => {
          calls++;
          await delay(100);
        }),
      ),
    );
    assert.equal(calls, 1);
    assert.deepEqual(results.map((r) => r.outcome).sort(), ['ran', 'recorded', 'recorded']);
  });

  test('wait: false reports the holder at once while another caller runs', async () => {
    const backend = new MemoryStore().backend;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const runner = runOnce(new MemoryStore(backend), 'deploy-9', { identity: 'runner', ...FAST }, () => gate);
    await waitUntil(async () => (await readOnceRecord(new MemoryStore(backend), 'deploy-9'))?.status === 'running');
    const t0 = Date.now();
    const busy = await runOnce(new MemoryStore(backend), 'deploy-9', { wait: false, ...FAST }, () => assert.fail('must not run'));
    assert.ok(Date.now() - t0 < 500, 'did not wait');
    assert.equal(busy.outcome, 'busy');
    assert.equal(busy.outcome === 'busy' && busy.holder, 'runner');
    assert.equal(busy.record?.status, 'running');
    release();
    assert.equal((await runner).outcome, 'ran');
    const done = await runOnce(new MemoryStore(backend), 'deploy-9', { wait: false, ...FAST }, () => assert.fail('must not run'));
    assert.equal(done.outcome, 'recorded');
  });

  test('timeoutMs gives up waiting with LeaseLostError naming the holder', async () => {
    const backend = new MemoryStore().backend;
    let release!: () => void;
    const runner = runOnce(new MemoryStore(backend), 'slow', { identity: 'slowcoach', ...FAST }, () => new Promise<void>((r) => (release = r)));
    await waitUntil(async () => (await readOnceRecord(new MemoryStore(backend), 'slow'))?.status === 'running');
    await assert.rejects(
      runOnce(new MemoryStore(backend), 'slow', { timeoutMs: 300, ...FAST }, () => assert.fail('must not run')),
      (e: Error) => e instanceof LeaseLostError && /still being run by slowcoach/.test(e.message),
    );
    release();
    await runner;
  });

  test('a runner that died mid-run (lock never released): another caller takes over after the lease and runs it again', async () => {
    const backend = new MemoryStore().backend;
    const store = new MemoryStore(backend);
    // The dead runner: it took the lock and wrote "running", then vanished without releasing.
    const dead = new LeaderElector({ store, lock: defaultOnceLock('v2'), identity: 'dead', releaseOnStop: false, ...FAST });
    dead.start();
    const { term } = await dead.elected();
    const record: OnceRecord = { v: 1, key: 'v2', lock: defaultOnceLock('v2'), status: 'running', attempt: 1, term, identity: 'dead', hostname: 'gone', pid: 1, startedAt: new Date().toISOString(), previous: [] };
    assert.ok((await store.ledger.put(onceLedgerKey('v2'), null, JSON.stringify(record))).ok);
    await dead.stop();
    const t0 = Date.now();
    const result = await runOnce(new MemoryStore(backend), 'v2', { identity: 'heir', ...FAST }, (ctx) => {
      assert.deepEqual(ctx.tookOverFrom, { identity: 'dead', term, attempt: 1 });
      assert.equal(ctx.attempt, 2);
    });
    assert.ok(Date.now() - t0 >= 500, 'waited for the dead runner\'s lease');
    assert.equal(result.outcome, 'ran');
    assert.deepEqual([result.record?.status, result.record?.attempt, result.record?.tookOverFrom?.identity], ['done', 2, 'dead']);
  });

  test('work cut off by a lost lock is recorded cut, and the next caller runs it', async () => {
    const backend = new MemoryStore().backend;
    const elector = new LeaderElector({ store: new MemoryStore(backend), lock: defaultOnceLock('cutme'), identity: 'first', ...FAST });
    const first = runOnce(new MemoryStore(backend), 'cutme', { elector }, async (ctx) => {
      setTimeout(() => void elector.resign(), 50);
      await new Promise<void>((r) => ctx.signal.addEventListener('abort', () => r(), { once: true }));
    });
    const r1 = await first;
    assert.equal(r1.outcome, 'cut');
    assert.equal(r1.record?.status, 'cut');
    const r2 = await runOnce(new MemoryStore(backend), 'cutme', FAST, () => {});
    assert.deepEqual([r2.outcome, r2.record?.status, r2.record?.attempt], ['ran', 'done', 2]);
  });

  test('a key being run under another lock is refused (terms of different locks cannot be compared)', async () => {
    const backend = new MemoryStore().backend;
    let release!: () => void;
    const runner = runOnce(new MemoryStore(backend), 'shared', { lock: 'lock-a', ...FAST }, () => new Promise<void>((r) => (release = r)));
    await waitUntil(async () => (await readOnceRecord(new MemoryStore(backend), 'shared'))?.status === 'running');
    await assert.rejects(
      runOnce(new MemoryStore(backend), 'shared', { lock: 'lock-b', ...FAST }, () => assert.fail('must not run')),
      (e: Error) => e instanceof InvalidConfigError && /being run under lock "lock-a", not "lock-b"/.test(e.message),
    );
    release();
    assert.equal((await runner).outcome, 'ran');
  });

  test('bad keys and locks are config errors; the default lock derives from the key', async () => {
    const store = new MemoryStore();
    await assert.rejects(runOnce(store, '', FAST, () => {}), (e: Error) => e instanceof InvalidConfigError && /key: must not be empty/.test(e.message));
    await assert.rejects(runOnce(store, 'has space', FAST, () => {}), InvalidConfigError);
    await assert.rejects(runOnce(store, 'ok', { ...FAST, lock: '-bad' }, () => {}), InvalidConfigError);
    assert.equal(defaultOnceLock('1.4.0+build.7'), 'once/1.4.0_build.7');
  });
});

async function waitUntil(check: () => Promise<boolean>, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('timed out');
    await delay(10);
  }
}
