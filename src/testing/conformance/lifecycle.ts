import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { StoreClosedError, StoreUnavailableError } from '../../core/errors.js';
import type { LeaseStore } from '../../core/store.js';
import { Handles, acquire, acquireWrite, faultsOf, uniqueLock, type ConformanceOptions, runnerOf } from './context.js';

/**
 * lifecycleTests registers what a handle owes its owner at the edges of its life: `close()`
 * resolves and may be called again; every later call throws StoreClosedError; watchers hear
 * nothing after close. With `faults.makeUnreachableStore`: a store whose server is not there
 * fails `read` and `write` (or already refuses to open) with StoreUnavailableError within
 * `callTimeoutMs` — never a hang.
 */
export function lifecycleTests(o: ConformanceOptions, caps: { notify: boolean; list: boolean; ledger: boolean }): void {
  const { describe, it } = runnerOf(o);
  const f = faultsOf(o);
  const callTimeoutMs = o.callTimeoutMs ?? 5_000;

  describe(`${o.name}: lifecycle`, { concurrency: true }, () => {
    it('close() is idempotent; every call after it throws StoreClosedError', async () => {
      const s = await o.makeStore();
      const lock = uniqueLock('closed');
      assert.ok((await acquire(s, lock, null, acquireWrite('alice'))).ok);
      await s.close();
      await s.close();
      await Promise.all([s.close(), s.close()]);
      await assert.rejects(s.read(lock), StoreClosedError, 'read after close');
      await assert.rejects(s.write(lock, null, acquireWrite('bob')), StoreClosedError, 'write after close');
      if (caps.list) await assert.rejects(s.list!(), StoreClosedError, 'list after close');
      if (caps.ledger) await assert.rejects(s.ledger!.get('k'), StoreClosedError, 'ledger after close');
    });

    if (caps.notify) {
      it('watchers of a closed handle hear nothing more', async () => {
        const handles = new Handles(o.makeStore);
        try {
          const [writer, watcher] = [await handles.get(), await o.makeStore()];
          const lock = uniqueLock('closed-watch');
          let calls = 0;
          watcher.watch!(lock, () => calls++);
          await sleep(200); // let a subscription settle
          await watcher.close();
          const after = calls;
          assert.ok((await acquire(writer, lock, null, acquireWrite('alice'))).ok);
          await sleep(500);
          assert.equal(calls, after, 'no call after close');
        } finally {
          await handles.closeAll();
        }
      });
    }

    if (f.makeUnreachableStore) {
      it(`an unreachable store fails read and write with StoreUnavailableError within ${callTimeoutMs} ms, not a hang`, async () => {
        // A store that checks its server when it opens may refuse to open at all: the same
        // failure, as long as it is StoreUnavailableError, on one line, in time.
        const opening = performance.now();
        let s: LeaseStore;
        try {
          s = await f.makeUnreachableStore!();
        } catch (err) {
          assert.ok(err instanceof StoreUnavailableError, `opening an unreachable store: ${String(err)}`);
          assert.ok(!err.message.includes('\n'), 'opening: a one-line message');
          assert.ok(performance.now() - opening <= callTimeoutMs + 1_000, 'opening took too long');
          return;
        }
        try {
          const calls: [string, () => Promise<unknown>][] = [
            ['read', () => s.read('x')],
            ['write', () => s.write('x', null, acquireWrite('alice'))],
          ];
          for (const [what, call] of calls) {
            const started = performance.now();
            const timer = new AbortController();
            const outcome = await Promise.race([
              call().then(() => 'resolved', (err: unknown) => err),
              sleep(callTimeoutMs + 1_000, 'hung', { signal: timer.signal }).catch(() => 'aborted'),
            ]);
            timer.abort();
            assert.ok(outcome instanceof StoreUnavailableError, `${what} on an unreachable store: ${String(outcome)}`);
            assert.ok(!outcome.message.includes('\n'), `${what}: a one-line message`);
            const took = performance.now() - started;
            assert.ok(took <= callTimeoutMs + 1_000, `${what} took ${took.toFixed(0)} ms`);
          }
        } finally {
          await s.close();
        }
      });
    }
  });
}
