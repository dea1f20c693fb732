/**
 * What the store fault tests (test/stores/*-faults.test.ts) share: real electors on short leases,
 * each on its own store handle, with a log of their transitions; a recorder of exceptions that
 * escape; and the kill/restart and freeze/thaw scenarios every store must pass. A fault test
 * keeps only what is specific to its store: how its server is killed, frozen or cut.
 */
import { after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { LeaderElector, type StopReason } from '../../src/core/elector.js';
import type { LeaseStore } from '../../src/core/store.js';
import { uniqueLock, waitFor } from '../../src/testing/conformance/context.js';

/** Short leases, so that a fault outlasts a lease within seconds. */
export const TIMING = { leaseDurationMs: 2_000, renewDeadlineMs: 1_400, retryPeriodMs: 200 } as const;
/** Timer and event-loop slack allowed on top of the renew deadline. */
export const SLACK_MS = 600;

/** StoreFactory opens a new handle (its own connections) on the store under test. */
export type StoreFactory<S extends LeaseStore> = (lock: string) => S | Promise<S>;

/** Transition is one leadership starting or ending, stamped with performance.now(). */
export interface Transition {
  at: number;
  who: string;
  kind: 'elected' | 'stopped';
  term: number;
  reason?: StopReason;
}

/** A server a test can kill and start again (a ManagedServer). */
export interface Killable {
  kill(): Promise<void>;
  start(): Promise<unknown>;
}

/** A server a test can freeze and thaw (a ManagedServer, or something that freezes more of it). */
export interface Pausable {
  pause(): void;
  resume(): void;
}

/** Candidates are electors for one lock, each on its own store handle, logging their transitions. */
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

  private constructor(readonly lock: string) {}

  /** start opens `count` store handles, puts an elector on each and starts them. */
  static async start<S extends LeaseStore>(lock: string, count: number, makeStore: StoreFactory<S>): Promise<Candidates<S>> {
    const g = new Candidates<S>(lock);
    for (let i = 0; i < count; i++) g.add(await makeStore(lock), `${lock}-c${i}`);
    g.electors.forEach((e) => e.start());
    return g;
  }

  private add(store: S, who: string): void {
    const e = new LeaderElector({ store, lock: this.lock, identity: who, ...TIMING });
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

  /** stop stops every elector, then closes every store handle; calling it again waits for the first call. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await Promise.all(this.electors.map((e) => e.stop()));
      await Promise.all(this.stores.map((s) => s.close()));
    })();
    return this.stopping;
  }
}

/**
 * FaultHarness is one fault test file's shared state. Create it at the file's top level: it
 * records uncaughtException / unhandledRejection until the file's tests are done, and call
 * cleanup() from the file's afterEach.
 */
export class FaultHarness<S extends LeaseStore> {
  /** Errors that escaped as uncaughtException / unhandledRejection since the last cleanup. */
  readonly escaped: unknown[] = [];
  private groups: Candidates<S>[] = [];
  private readonly down = new Set<Killable>();

  /** `name` labels reports and locks (e.g. "redis"); `makeStore` opens a handle on the store under test. */
  constructor(readonly name: string, private readonly makeStore: StoreFactory<S>) {
    const onEscape = (err: unknown) => this.escaped.push(err);
    process.on('uncaughtException', onEscape);
    process.on('unhandledRejection', onEscape);
    after(() => {
      process.off('uncaughtException', onEscape);
      process.off('unhandledRejection', onEscape);
    });
  }

  /** candidates starts two candidates (by default) for a fresh lock; cleanup() stops them. */
  async candidates(what: string, options: { count?: number; makeStore?: StoreFactory<S> } = {}): Promise<Candidates<S>> {
    const g = await Candidates.start(uniqueLock(`${this.name}-${what}`), options.count ?? 2, options.makeStore ?? this.makeStore);
    this.groups.push(g);
    return g;
  }

  /** report prints a measured figure as a TAP comment. */
  report(line: string): void {
    process.stdout.write(`# ${this.name} faults: ${line}\n`);
  }

  /** assertNothingEscaped fails if anything escaped as an uncaught exception or unhandled rejection. */
  assertNothingEscaped(): void {
    assert.deepEqual(this.escaped, [], 'nothing escaped as an uncaught exception or unhandled rejection');
  }

  /** kill kills a server; cleanup() starts it again if the test did not. */
  async kill(server: Killable): Promise<void> {
    this.down.add(server);
    await server.kill();
  }

  /** restart starts a server that kill() stopped. */
  async restart(server: Killable): Promise<void> {
    await server.start();
    this.down.delete(server);
  }

  /**
   * cleanup starts again any server a test left killed, stops every group, then checks that
   * nothing escaped meanwhile (and forgets what did, for the next test).
   */
  async cleanup(): Promise<void> {
    try {
      for (const server of this.down) await this.restart(server);
    } finally {
      await Promise.all(this.groups.splice(0).map((g) => g.stop()));
    }
    const escaped = this.escaped.splice(0);
    assert.deepEqual(escaped, [], 'nothing escaped as an uncaught exception or unhandled rejection');
  }

  /**
   * assertStepsDownByDeadline: a leader that lost the store stops on its own, for the renew
   * deadline, with its signal aborted, within the deadline (plus slack) of its last good write.
   */
  async assertStepsDownByDeadline(g: Candidates<S>, leader: Transition): Promise<Transition> {
    const stopped = await waitFor(
      () => g.log.find((t) => t.kind === 'stopped' && t.who === leader.who && t.term === leader.term),
      TIMING.renewDeadlineMs + 3_000,
      'the leader to step down',
    );
    assert.equal(stopped.reason, 'renew-deadline');
    assert.equal(g.signals.get(leader.term)?.aborted, true, 'the leadership signal is aborted');
    const late = stopped.at - g.lastWriteStart.get(leader.who)!;
    assert.ok(late <= TIMING.renewDeadlineMs + SLACK_MS, `stepped down ${late.toFixed(0)} ms after its last good write started`);
    this.report(`stepped down ${late.toFixed(0)} ms after its last good write started (renew deadline ${TIMING.renewDeadlineMs} ms)`);
    return stopped;
  }

  /**
   * killAndRestart: the server is killed under a leader, which steps down by its deadline;
   * nobody leads while it is down; after a restart a leader is elected again with a higher term.
   */
  async killAndRestart(g: Candidates<S>, server: Killable, recoverMs = 20_000): Promise<void> {
    const leader = await g.leader();
    await sleep(700); // a few renewals
    await this.kill(server);
    await this.assertStepsDownByDeadline(g, leader);
    assert.ok(!g.electors.some((e) => e.isLeader()), 'nobody leads while the server is down');
    await sleep(500);
    const restartedAt = performance.now();
    await this.restart(server);
    const again = await waitFor(() => g.electedSince(restartedAt), recoverMs, 'a leader after the restart');
    assert.ok(again.term > leader.term, `term ${again.term} after ${leader.term}: the counter survived the restart`);
    this.report(`leader again ${(again.at - restartedAt).toFixed(0)} ms after the restart began`);
    g.assertNoOverlap();
    this.assertNothingEscaped();
  }

  /**
   * freezeAndThaw: the server is frozen under a leader, which steps down by its deadline; nobody
   * leads while it stays frozen past the lease; after the thaw a leader is elected again.
   */
  async freezeAndThaw(g: Candidates<S>, server: Pausable, recoverMs = 20_000): Promise<void> {
    const leader = await g.leader();
    await sleep(700);
    const pausedAt = performance.now();
    server.pause();
    try {
      const stopped = await this.assertStepsDownByDeadline(g, leader);
      // Frozen for longer than the lease: counted from the freeze and from the step-down.
      const frozenUntil = Math.max(pausedAt + TIMING.leaseDurationMs + 1_500, stopped.at + TIMING.leaseDurationMs + 1_000 - TIMING.renewDeadlineMs);
      await sleep(Math.max(0, frozenUntil - performance.now()));
      assert.ok(!g.electors.some((e) => e.isLeader()), 'nobody leads while the server is frozen');
    } finally {
      server.resume();
    }
    const resumedAt = performance.now();
    const again = await waitFor(() => g.electedSince(resumedAt), recoverMs, 'a leader after SIGCONT');
    assert.ok(again.term > leader.term, `term ${again.term} after ${leader.term}`);
    this.report(`leader again ${(again.at - resumedAt).toFixed(0)} ms after SIGCONT (frozen ${(resumedAt - pausedAt).toFixed(0)} ms)`);
    g.assertNoOverlap();
    this.assertNothingEscaped();
  }

  /**
   * assertRecoversFromCuts, after connections were cut `cuts` times under held-up renewals: the
   * failures were reported as store errors, a leader renews again on fresh connections, every
   * step-down was for the deadline or a loss, and nothing escaped.
   */
  async assertRecoversFromCuts(g: Candidates<S>, errorsBefore: number, what: string, cuts: number): Promise<void> {
    assert.ok(g.storeErrors > errorsBefore, 'the cut renewals were reported as store errors');
    const stepDowns = g.log.filter((t) => t.kind === 'stopped').length;
    this.report(`${what}: ${g.storeErrors - errorsBefore} store errors reported, ${stepDowns} step-downs over ${cuts} cuts`);
    const leader = await g.leader();
    const renewedAt = g.lastWriteStart.get(leader.who)!;
    await waitFor(() => g.lastWriteStart.get(leader.who)! > renewedAt, 3_000, 'a renewal on fresh connections');
    g.assertNoOverlap();
    for (const t of g.log) if (t.kind === 'stopped') assert.ok(['renew-deadline', 'lost'].includes(t.reason!), `stopped: ${t.reason}`);
    this.assertNothingEscaped();
  }
}
