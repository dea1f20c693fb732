/**
 * Candidates: real LeaderElectors for one lock, each on its own store handle, with a log of
 * every leadership that started or ended. The fault scenarios (faults.ts) run on them, and a
 * store's own fault tests can too: `new Candidates(lock, timing).start(2, makeStore)`.
 */
import assert from 'node:assert/strict';
import { LeaderElector, type StopReason } from '../../core/elector.js';
import type { LeaseStore } from '../../core/store.js';
import { waitFor } from './context.js';

/** FaultTiming is the elector timing the fault scenarios use. */
export interface FaultTiming {
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

/**
 * faultTiming scales short leases from the store's shortest supported lease (at least 1.5 s),
 * so that a fault outlasts a lease within seconds: renew deadline 70 %, retry 10 % of it.
 */
export function faultTiming(minLeaseMs = 600): FaultTiming {
  const lease = Math.max(1_500, minLeaseMs);
  return { leaseDurationMs: lease, renewDeadlineMs: Math.round(lease * 0.7), retryPeriodMs: Math.round(lease / 10) };
}

/** STEP_DOWN_SLACK_MS is the timer and event-loop slack allowed on top of a renew deadline. */
export const STEP_DOWN_SLACK_MS = 600;

/** Transition is one leadership starting or ending, stamped with performance.now(). */
export interface Transition {
  at: number;
  who: string;
  kind: 'elected' | 'stopped';
  term: number;
  reason?: StopReason;
}

/** Candidates: see the file comment. */
export class Candidates<S extends LeaseStore = LeaseStore> {
  readonly electors: LeaderElector[] = [];
  readonly stores: S[] = [];
  readonly log: Transition[] = [];
  /** Monotonic start of each candidate's last successful write (what its deadline counts from). */
  readonly lastWriteStart = new Map<string, number>();
  /** The leadership signal of each term. */
  readonly signals = new Map<number, AbortSignal>();
  /** storeError events, all candidates together. */
  storeErrors = 0;
  private stopping?: Promise<void>;

  constructor(readonly lock: string, readonly timing: FaultTiming) {}

  /** start opens `count` store handles, puts an elector on each and starts them all. */
  async start(count: number, makeStore: (lock: string) => S | Promise<S>): Promise<this> {
    for (let i = 0; i < count; i++) this.add(await makeStore(this.lock), `${this.lock}-c${i}`);
    this.electors.forEach((e) => e.start());
    return this;
  }

  private add(store: S, who: string): void {
    const e = new LeaderElector({ store, lock: this.lock, identity: who, ...this.timing });
    e.on('elected', (ev) => {
      this.lastWriteStart.set(who, e.leadershipWindow()!.renewStartMs);
      this.signals.set(ev.term, ev.signal);
      this.log.push({ at: performance.now(), who, kind: 'elected', term: ev.term });
    });
    e.on('renewed', () => this.lastWriteStart.set(who, e.leadershipWindow()!.renewStartMs));
    e.on('stopped', (ev) => this.log.push({ at: performance.now(), who, kind: 'stopped', term: ev.term, reason: ev.reason }));
    e.on('storeError', () => this.storeErrors++);
    this.electors.push(e);
    this.stores.push(store);
  }

  /** leader waits until a candidate leads, and returns the transition that made it leader. */
  leader(ms = 10_000): Promise<Transition> {
    return waitFor(() => {
      const e = this.electors.find((x) => x.isLeader());
      return e && this.log.filter((t) => t.kind === 'elected' && t.who === e.identity).at(-1);
    }, ms, 'a leader');
  }

  /** leaders counts the candidates that believe they lead right now. */
  leaders(): number {
    return this.electors.filter((e) => e.isLeader()).length;
  }

  /** electedSince returns the first election at or after `at` (performance.now()). */
  electedSince(at: number): Transition | undefined {
    return this.log.find((t) => t.kind === 'elected' && t.at >= at);
  }

  /** assertNoOverlap: elected/stopped alternate, each stop by the one elected, terms strictly growing. */
  assertNoOverlap(): void {
    let current: Transition | undefined;
    let lastTerm = 0;
    for (const t of this.log) {
      if (t.kind === 'elected') {
        assert.equal(current, undefined, `${t.who} elected (term ${t.term}) while ${current?.who} led (term ${current?.term})`);
        assert.ok(t.term > lastTerm, `term ${t.term} after ${lastTerm}`);
        lastTerm = t.term;
        current = t;
      } else {
        assert.equal(t.who, current?.who, `${t.who} stopped while ${current?.who} led`);
        current = undefined;
      }
    }
  }

  /**
   * assertStepsDownByDeadline: a leader that lost the store stops on its own, for the renew
   * deadline, with its signal aborted, within the deadline (plus slack) of its last good write.
   */
  async assertStepsDownByDeadline(leader: Transition): Promise<Transition> {
    const { renewDeadlineMs } = this.timing;
    const stopped = await waitFor(
      () => this.log.find((t) => t.kind === 'stopped' && t.who === leader.who && t.term === leader.term),
      renewDeadlineMs + 3_000,
      'the leader to step down',
    );
    assert.equal(stopped.reason, 'renew-deadline');
    assert.equal(this.signals.get(leader.term)?.aborted, true, 'the leadership signal is aborted');
    const late = stopped.at - this.lastWriteStart.get(leader.who)!;
    assert.ok(late <= renewDeadlineMs + STEP_DOWN_SLACK_MS, `stepped down ${late.toFixed(0)} ms after its last good write started`);
    return stopped;
  }

  /**
   * assertRecoversFromCuts, after connections were cut under held-up renewals: the failures were
   * reported as store errors (more than `errorsBefore`), a leader renews again on fresh
   * connections, every step-down was for the deadline or a loss, and leaderships never overlapped.
   */
  async assertRecoversFromCuts(errorsBefore: number): Promise<void> {
    assert.ok(this.storeErrors > errorsBefore, 'the cut renewals were reported as store errors');
    const leader = await this.leader();
    const renewedAt = this.lastWriteStart.get(leader.who)!;
    await waitFor(() => this.lastWriteStart.get(leader.who)! > renewedAt, this.timing.leaseDurationMs * 2, 'a renewal on fresh connections');
    this.assertNoOverlap();
    for (const t of this.log) if (t.kind === 'stopped') assert.ok(['renew-deadline', 'lost'].includes(t.reason!), `stopped: ${t.reason}`);
  }

  /** stop stops every elector, then closes every store handle; calling it again waits for the first call. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await Promise.all(this.electors.map((e) => e.stop()));
      await Promise.all(this.stores.map((s) => s.close().catch(() => {})));
    })();
    return this.stopping;
  }
}

/**
 * recordEscapes collects what escapes as `uncaughtException` / `unhandledRejection` from now on.
 * `take()` returns and forgets what escaped so far; `stop()` removes the listeners.
 */
export function recordEscapes(): { take(): unknown[]; stop(): void } {
  const escaped: unknown[] = [];
  const onEscape = (err: unknown) => escaped.push(err);
  process.on('uncaughtException', onEscape);
  process.on('unhandledRejection', onEscape);
  return {
    take: () => escaped.splice(0),
    stop: () => {
      process.off('uncaughtException', onEscape);
      process.off('unhandledRejection', onEscape);
    },
  };
}
