/**
 * A voluntary handover goes to the waiting standby: after resign() or a step-down request, the
 * old leader holds off for a retry period instead of re-acquiring on its own release
 * notification (found by the serve tests; fixed in the elector's holdOff).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaderElector } from '../../src/core/elector.js';
import { MemoryStore } from '../../src/stores/memory/index.js';
import { waitFor } from '../harness/wait.js';

const TIMING = { leaseDurationMs: 2000, renewDeadlineMs: 1400, retryPeriodMs: 400 };

test('resign() hands the lease to the waiting standby (memory store)', async () => {
  const store = new MemoryStore();
  const a = new LeaderElector({ store, lock: 'handover', identity: 'a', ...TIMING }).start();
  await a.elected();
  const b = new LeaderElector({ store, lock: 'handover', identity: 'b', ...TIMING }).start();
  try {
    await waitFor(() => b.leader()?.holder === 'a', 5000, 'the standby to see the leader'); // b has seen a and waits
    await a.resign();
    await new Promise((r) => setTimeout(r, 300)); // shorter than a's promised retry-period pause
    assert.equal((await store.read('handover'))?.holder, 'b');
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

test('a step-down request hands the lease to the standby (SQLite, one connection each, as two processes)', async () => {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  const { SqliteStore } = await import('../../src/stores/sqlite/index.js');
  const { requestStepDown } = await import('../../src/core/step-down.js');
  const dir = mkdtempSync(join(tmpdir(), 'baton-handover-'));
  const path = join(dir, 'h.db');
  const stores = [new SqliteStore(path), new SqliteStore(path), new SqliteStore(path)];
  const a = new LeaderElector({ store: stores[0]!, lock: 'handover', identity: 'a', ...TIMING }).start();
  await a.elected();
  const b = new LeaderElector({ store: stores[1]!, lock: 'handover', identity: 'b', ...TIMING }).start();
  try {
    await waitFor(() => b.leader()?.holder === 'a', 5000, 'the standby to see the leader'); // it waits behind a
    const out = await requestStepDown(stores[2]!, 'handover');
    assert.equal(out.record?.holder, 'b', `after the step-down the lease went to ${out.record?.holder}`);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
    await Promise.all(stores.map((s) => s.close()));
    rmSync(dir, { recursive: true, force: true });
  }
});
