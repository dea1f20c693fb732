/**
 * Step 3 of a directed handover (the give) can fail: a store timeout, a counter reservation
 * refused. The leader has already stopped its work and the successor has accepted, so the record
 * is owed to the successor. Found in CI (MariaDB rolling deploy, 27 Nov): the leader's give did
 * not get through, and 364 ms later the same old leader took its own record back as an orphan,
 * so leadership moved twice. These tests make the give fail on purpose (memory store).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaderElector } from '../../src/core/elector.js';
import { HANDOVER_KEYS, type LeaseStore, type LeaseWrite } from '../../src/core/store.js';
import { StoreUnavailableError } from '../../src/core/errors.js';
import { MemoryStore } from '../../src/stores/memory/index.js';
import { waitFor } from '../harness/wait.js';

const TIMING = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 100 };

/** failingGives wraps `store` so its first `n` give writes (step 3) throw before reaching it. */
function failingGives(store: LeaseStore, n: number): { store: LeaseStore; failed: () => number } {
  let failed = 0;
  const wrapped = Object.create(store) as LeaseStore;
  wrapped.write = async (lock: string, expected: string | null, next: LeaseWrite) => {
    if (next.newTerm && HANDOVER_KEYS.instance in next.metadata && failed < n) {
      failed++;
      throw new StoreUnavailableError('test: the give write timed out');
    }
    return store.write(lock, expected, next);
  };
  return { store: wrapped, failed: () => failed };
}

for (const n of [2, 6]) {
  test(`a give that fails ${n} times still goes to the successor; the old leader never takes it back`, async () => {
    const memory = new MemoryStore();
    const faulty = failingGives(memory, n);
    const leaders: string[] = [];
    const make = (identity: string, store: LeaseStore) => {
      const e = new LeaderElector({ store, lock: 'give', identity, ...TIMING, candidate: {} });
      e.on('storeError', () => {});
      e.on('elected', (ev) => leaders.push(`${identity}@${ev.term}`));
      return e;
    };
    const a = make('a', faulty.store).start();
    await a.elected();
    const b = make('b', memory).start();
    try {
      await waitFor(async () => (await a.candidates()).length === 2, 5000, 'both registered');
      const out = await a.handover('b', { timeoutMs: 10_000 });
      assert.equal(out.outcome, 'handed', `outcome ${out.outcome}`);
      assert.equal(faulty.failed(), n, 'the give writes failed as arranged');
      // Some campaign steps later, still b's: the old leader did not take its record back.
      await new Promise((r) => setTimeout(r, TIMING.retryPeriodMs * 8));
      assert.deepEqual(leaders.map((x) => x.split('@')[0]), ['a', 'b'], `leaders in order: ${leaders.join(' → ')}`);
      assert.ok(b.isLeader() && !a.isLeader());
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
}
