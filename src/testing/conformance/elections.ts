import assert from 'node:assert/strict';
import { LeaderElector, type ElectedEvent } from '../../core/elector.js';
import type { LeaseStore } from '../../core/store.js';
import { Handles, uniqueLock, waitFor, type ConformanceOptions, runnerOf } from './context.js';

/** Short timings scaled from the store's shortest supported lease. */
function timing(minLeaseMs: number) {
  const lease = Math.max(600, minLeaseMs);
  return { leaseDurationMs: lease, renewDeadlineMs: Math.round(lease * 0.6), retryPeriodMs: Math.round(lease / 8) };
}

/**
 * electionTests registers, with real LeaderElectors: expiry of a crashed holder (never early),
 * handover on release (notified when the store notifies), the order of lifecycle events, and the
 * concurrency fuzz test (many candidates increment a counter; the exact total is kept).
 */
export function electionTests(o: ConformanceOptions, caps: { notify: boolean; serverExpiry: boolean }): void {
  const { describe, it, after } = runnerOf(o);
  const t = timing(o.minLeaseMs ?? 600);
  const electors: LeaderElector[] = [];
  const handles = new Handles(o.makeStore);
  const elector = (store: LeaseStore, lock: string, identity: string, extra: object = {}) => {
    const e = new LeaderElector({ store, lock, identity, ...t, ...extra });
    e.on('storeError', () => {});
    electors.push(e);
    return e;
  };

  describe(`${o.name}: expiry and handover`, () => {
    after(async () => {
      await Promise.all(electors.splice(0).map((e) => e.stop().catch(() => {})));
      await handles.closeAll();
    });

    it('a crashed holder is replaced after its lease, never before', async () => {
      const lock = uniqueLock('expiry');
      const [sa, sb] = [await handles.get(), await handles.get()];
      const a = elector(sa, lock, 'alice', { releaseOnStop: false });
      a.start();
      const won = await a.elected();
      // Simulate a crash: stop without releasing, so the record stays until it expires.
      // The earliest instant anyone may acquire, on this process's monotonic clock.
      const window = a.leadershipWindow()!;
      await a.stop();
      assert.equal(won.signal.aborted, true);
      const b = elector(sb, lock, 'bob');
      b.start();
      const next = await withTimeout(b.elected(), t.leaseDurationMs * 4 + 3000, 'bob elected after expiry');
      const early = window.othersMayAcquireMs - performance.now();
      assert.ok(early <= 0, `bob took over ${early.toFixed(1)}ms before alice's lease could have expired`);
      assert.ok(next.term > won.term, 'the new leader has a higher term');
    });

    it('graceful stop releases; a standby takes over and its term is higher', async () => {
      const lock = uniqueLock('handover');
      const [sa, sb] = [await handles.get(), await handles.get()];
      const a = elector(sa, lock, 'alice');
      a.start();
      const first = await a.elected();
      const b = elector(sb, lock, 'bob');
      b.start();
      await waitFor(() => b.leader()?.holder === 'alice', 5000, 'bob to see alice');
      const stoppedAt = Date.now();
      const stopped = new Promise((r) => a.once('stopped', r));
      await a.stop();
      assert.deepEqual(await stopped, { term: first.term, reason: 'stopped' });
      const second = await withTimeout(b.elected(), t.leaseDurationMs * 3, 'bob elected after release');
      const handover = Date.now() - stoppedAt;
      assert.ok(second.term > first.term);
      if (caps.notify) {
        // Notified, not polled: well under one retry period.
        assert.ok(handover < Math.max(t.retryPeriodMs, 250) + 500, `handover took ${handover}ms`);
      }
    });

    it('stopped-leading always follows elected, with a reason, and the signal is aborted first', async () => {
      const lock = uniqueLock('events');
      const s = await handles.get();
      const a = elector(s, lock, 'alice');
      const log: string[] = [];
      let signal: AbortSignal | undefined;
      a.on('elected', (e) => {
        log.push(`elected ${e.term}`);
        signal = e.signal;
      });
      a.on('stopped', (e) => log.push(`stopped ${e.term} ${e.reason} aborted=${signal?.aborted}`));
      a.start();
      const { term } = await a.elected();
      await a.resign();
      await waitFor(() => log.length >= 2, 5000, 'stopped');
      assert.deepEqual(log.slice(0, 2), [`elected ${term}`, `stopped ${term} resigned aborted=true`]);
      await a.stop();
    });

    it('fuzz: many candidates increment a counter under the lease; the exact total is kept', async () => {
      const lock = uniqueLock('fuzz');
      const candidates = 5;
      const rounds = 12;
      const perRound = 5;
      let counter = 0;
      let increments = 0;
      let active = 0;
      let maxActive = 0;
      let lastTerm = 0;
      const termsSeen: number[] = [];
      const all: LeaderElector[] = [];
      for (let i = 0; i < candidates; i++) {
        // Handovers here are graceful (resign), so a longer lease costs no time; it keeps a busy
        // machine's event-loop delays well inside lease − renewDeadline.
        const e = elector(await handles.get(), lock, `cand-${i}`, timing(Math.max(3000, o.minLeaseMs ?? 0)));
        all.push(e);
        e.on('elected', (ev: ElectedEvent) => {
          void (async () => {
            active++;
            maxActive = Math.max(maxActive, active);
            assert.ok(ev.term > lastTerm, `term ${ev.term} after ${lastTerm}`);
            lastTerm = ev.term;
            termsSeen.push(ev.term);
            for (let k = 0; k < perRound && !ev.signal.aborted; k++) {
              const v = counter;
              await new Promise((r) => setTimeout(r, 1));
              counter = v + 1;
              increments++;
            }
            active--;
            if (termsSeen.length < rounds) await e.resign();
          })();
        });
      }
      all.forEach((e) => e.start());
      await waitFor(() => termsSeen.length >= rounds && active === 0, 60_000, `${rounds} leaderships`);
      await Promise.all(all.map((e) => e.stop()));
      assert.equal(maxActive, 1, 'never two leaders at once');
      assert.equal(counter, increments, 'no lost update under the lease');
      assert.ok(increments >= rounds * perRound - perRound, `increments ${increments}`);
    });
  });
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out after ${ms}ms: ${what}`)), ms);
    p.then((v) => (clearTimeout(t), resolve(v)), (e) => (clearTimeout(t), reject(e)));
  });
}
