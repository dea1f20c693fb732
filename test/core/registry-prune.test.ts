/**
 * The candidate registry is pruned by its leader (core/candidates.ts, PRUNE_AFTER_BEATS): an entry
 * whose beat the leader has seen unchanged for ten of its refresh periods is removed — a dead
 * candidate's, or one that left — while live ones stay, and one removed by mistake comes back at
 * its next beat. Memory store, real timers, 100 ms refresh periods.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaderElector } from '../../src/core/elector.js';
import { candidateKey, listCandidates, type CandidateInfo } from '../../src/core/candidates.js';
import type { Ledger } from '../../src/core/store.js';
import { MemoryStore } from '../../src/stores/memory/index.js';
import { waitFor } from '../harness/wait.js';

const TIMING = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 100 };
const REFRESH_MS = 100;

/** ghost writes a registry entry nobody beats, as a candidate killed with -9 leaves it. */
async function ghost(ledger: Ledger, lock: string, identity: string, left?: string): Promise<void> {
  const info: CandidateInfo = {
    identity,
    instance: `${identity}-1`,
    host: 'gone',
    pid: 1,
    startedAt: new Date().toISOString(),
    beat: 7,
    at: new Date().toISOString(),
    refreshMs: REFRESH_MS,
    ...(left ? { left } : {}),
  };
  assert.ok((await ledger.put(candidateKey(lock, identity), null, JSON.stringify(info))).ok);
}

test('the leader removes the entries of candidates that are gone, and only those', async () => {
  const store = new MemoryStore();
  const lock = 'prune';
  const make = (identity: string) => {
    const e = new LeaderElector({ store, lock, identity, ...TIMING, candidate: { refreshMs: REFRESH_MS } });
    e.on('storeError', () => {});
    return e;
  };
  const a = make('a').start();
  await a.elected();
  const b = make('b').start();
  await ghost(store.ledger, lock, 'dead');
  await ghost(store.ledger, lock, 'left-earlier', 'stopped');
  const names = async () => (await listCandidates(store.ledger, lock)).map((c) => c.identity).sort();
  try {
    await waitFor(async () => (await names()).includes('b'), 5000, 'b registered');
    const removedAt = await waitFor(async () => !(await names()).includes('dead') && !(await names()).includes('left-earlier'), 10_000, 'the silent entries removed');
    assert.ok(removedAt, 'pruned');
    assert.deepEqual(await names(), ['a', 'b'], 'the live candidates stay');

    // Not before ten refresh periods of silence: a new ghost is still there after five.
    await ghost(store.ledger, lock, 'fresh-ghost');
    await new Promise((r) => setTimeout(r, REFRESH_MS * 5));
    assert.ok((await names()).includes('fresh-ghost'), 'an entry silent for five refresh periods stays');

    // A live candidate's entry removed by mistake (a race, an operator) comes back at its next beat.
    const entry = await store.ledger.get(candidateKey(lock, 'b'));
    assert.ok(entry && (await store.ledger.remove!(entry.key, entry.version)));
    await waitFor(async () => (await names()).includes('b'), 5000, 'b registered again');
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

test('a standby never prunes; a leader without a registry entry of its own prunes nothing', async () => {
  const store = new MemoryStore();
  const lock = 'prune-standby';
  // The leader runs without the registry (no `candidate` option); the standby has one.
  const leader = new LeaderElector({ store, lock, identity: 'plain', ...TIMING }).start();
  await leader.elected();
  const standby = new LeaderElector({ store, lock, identity: 's', ...TIMING, candidate: { refreshMs: REFRESH_MS } }).start();
  await ghost(store.ledger, lock, 'dead');
  try {
    await new Promise((r) => setTimeout(r, REFRESH_MS * 25));
    const left = (await listCandidates(store.ledger, lock)).map((c) => c.identity).sort();
    assert.deepEqual(left, ['dead', 's'], 'nothing removed by a standby');
  } finally {
    await Promise.all([leader.stop(), standby.stop()]);
  }
});
