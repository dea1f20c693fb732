/**
 * SqliteStore while another connection holds the database's write lock (as another process's
 * stuck transaction, or the chaos harness's store fault, does): a waiting write must leave the
 * event loop free — timers fire, reads are answered, other writes can be asked for — and take
 * the lock promptly once it is freed; a write that never gets it fails with the busy error once
 * its own busy timeout has passed, counted from when it was asked for (busy-wait.ts).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { StoreUnavailableError } from '../../src/core/errors.js';
import type { LeaseWrite } from '../../src/core/store.js';
import { openDatabase } from '../../src/stores/sqlite/driver.js';
import { SqliteStore } from '../../src/stores/sqlite/index.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-sqlite-busy-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const acquire = (holder: string): LeaseWrite => ({
  holder,
  newTerm: true,
  leaseDurationMs: 5000,
  acquiredAt: Date.now(),
  renewedAt: Date.now(),
  transitions: 1,
  stepDownRequested: false,
  metadata: {},
});

/** lockDatabase takes the write lock through a connection of its own until `release`. */
function lockDatabase(path: string): { release(): void } {
  const db = openDatabase(path, 5_000);
  db.exec('BEGIN EXCLUSIVE');
  return {
    release() {
      db.exec('COMMIT');
      db.close();
    },
  };
}

const settled = (p: Promise<unknown>) => {
  const state = { done: false };
  p.then(
    () => (state.done = true),
    () => (state.done = true),
  );
  return state;
};

test('sqlite: a write waiting for another connection\'s lock leaves the event loop free, and lands soon after the lock is freed', async () => {
  const path = join(dir, 'free.db');
  const store = new SqliteStore(path, { busyTimeoutMs: 5_000 });
  try {
    assert.ok((await store.write('before', null, acquire('a'))).ok);
    const lock = lockDatabase(path);
    const pending = store.write('w', null, acquire('a'));
    const write = settled(pending);
    // Timers keep firing while the write waits (a synchronous busy wait would run none for 5 s).
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 10);
    await new Promise((r) => setTimeout(r, 300));
    clearInterval(ticker);
    assert.ok(ticks >= 5, `only ${ticks} timer ticks in 300 ms while a write waited`);
    // A read is answered while the write still waits (a WAL reader is not blocked by a writer).
    assert.equal((await store.read('before'))?.holder, 'a');
    assert.equal(write.done, false, 'the write cannot have landed while the lock is held');
    const releasedAt = performance.now();
    lock.release();
    const result = await pending;
    const afterMs = performance.now() - releasedAt;
    assert.ok(result.ok);
    // Liveness slack for a loaded machine; waiting inside SQLite after 300 ms retries every 100 ms.
    assert.ok(afterMs < 1_000, `the write landed ${Math.round(afterMs)} ms after the lock was freed`);
  } finally {
    await store.close();
  }
});

test('sqlite: writes that never get the lock fail with the busy error after their own timeout, not one after another', async () => {
  const path = join(dir, 'timeout.db');
  const store = new SqliteStore(path, { busyTimeoutMs: 400 });
  const lock = lockDatabase(path);
  try {
    const started = performance.now();
    // Three writes asked for at once, as three electors of one process would: each has waited
    // its 400 ms when it fails. Waited for in turn, the third would fail after 1.2 s.
    const outcomes = await Promise.all(
      ['x', 'y', 'z'].map((lockName) =>
        store.write(lockName, null, acquire('a')).then(
          () => ({ ok: true as const, ms: performance.now() - started }),
          (err: unknown) => ({ ok: false as const, err, ms: performance.now() - started }),
        ),
      ),
    );
    for (const o of outcomes) {
      assert.equal(o.ok, false);
      assert.ok(!o.ok && o.err instanceof StoreUnavailableError, `expected StoreUnavailableError, got ${!o.ok && String(o.err)}`);
      assert.match((o as { err: Error }).err.message, /^sqlite: .*locked/);
      assert.ok(o.ms >= 390, `failed after ${Math.round(o.ms)} ms, before its busy timeout`);
    }
    const last = Math.max(...outcomes.map((o) => o.ms));
    // Liveness slack for a loaded machine, still short of the 1.2 s of waiting in turn.
    assert.ok(last < 1_100, `the last write failed after ${Math.round(last)} ms`);
  } finally {
    lock.release();
    await store.close();
  }
});

test('sqlite: writes that waited for the lock together land together, each as it would have alone, in order', async () => {
  const path = join(dir, 'batch.db');
  const store = new SqliteStore(path, { busyTimeoutMs: 5_000 });
  const other = new SqliteStore(path);
  try {
    const lock = lockDatabase(path);
    // Asked for while the database is locked, in this order: a create, a second create of the
    // same lock (must lose to the first), a ledger insert and its update, and a create whose
    // expected revision is wrong (must lose, seeing the first create's record).
    const first = store.write('b', null, acquire('first'));
    const second = store.write('b', null, acquire('second'));
    const put = store.ledger.put('k', null, 'v1');
    const update = put.then((r) => (r.ok ? store.ledger.put('k', r.entry.version, 'v2') : r));
    const wrong = store.write('b', '999', acquire('third'));
    await new Promise((r) => setTimeout(r, 100));
    lock.release();
    const [a, b, p, w] = await Promise.all([first, second, put, wrong]);
    assert.ok(a.ok && a.record.holder === 'first');
    assert.equal(b.ok, false);
    assert.equal(!b.ok && b.current?.holder, 'first');
    assert.ok(p.ok);
    assert.equal(w.ok, false);
    assert.equal(!w.ok && w.current?.revision, a.ok ? a.record.revision : 'none');
    assert.ok((await update).ok);
    // Another connection sees exactly that.
    assert.equal((await other.read('b'))?.holder, 'first');
    assert.equal((await other.ledger.get('k'))?.value, 'v2');
  } finally {
    await store.close();
    await other.close();
  }
});

test('sqlite: a write still waiting when the store is closed fails as closed', async () => {
  const path = join(dir, 'closed.db');
  const store = new SqliteStore(path, { busyTimeoutMs: 5_000 });
  const lock = lockDatabase(path);
  try {
    const pending = store.write('c', null, acquire('a')).then(
      () => 'landed',
      (err: unknown) => (err as Error).name,
    );
    await new Promise((r) => setTimeout(r, 50));
    await store.close();
    assert.equal(await pending, 'StoreClosedError');
  } finally {
    lock.release();
  }
});
