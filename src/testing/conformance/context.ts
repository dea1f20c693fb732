import * as nodeTest from 'node:test';
import type { LeaseStore, LeaseWrite, StoreCapabilities, WriteResult } from '../../core/store.js';

/**
 * TestRunner is what the suite registers its tests with (ConformanceOptions.test): node:test's
 * `describe`, `it`, `before`, `after` and `afterEach` by default. Another runner (mocha, vitest,
 * jest) is passed in with a thin adapter: `describe` and `it` may get an options object between
 * the name and the function (`concurrency`; `skip`: false, or a reason), and a test function
 * gets a context with `skip(reason)` and `diagnostic(line)`.
 */
export interface TestRunner {
  describe(name: string, optionsOrFn: { concurrency?: boolean | number } | (() => void), fn?: () => void): unknown;
  it(name: string, optionsOrFn: { skip?: boolean | string; timeout?: number } | TestFn, fn?: TestFn): unknown;
  before(fn: () => unknown): unknown;
  after(fn: () => unknown): unknown;
  afterEach(fn: () => unknown): unknown;
}

/** TestContextLike is what the suite's tests use of their test context. */
export interface TestContextLike {
  skip(reason?: string): void;
  diagnostic(message: string): void;
}

/** TestFn is one test's body. */
export type TestFn = (t: TestContextLike) => unknown;

/** runnerOf is the runner the suite's parts register with: `o.test`, else node:test. */
export function runnerOf(o: ConformanceOptions): TestRunner {
  return o.test ?? (nodeTest as unknown as TestRunner);
}

/** ConformanceOptions describes the store under test to the conformance suite. */
export interface ConformanceOptions {
  /** Name shown in test titles, e.g. "sqlite". */
  name: string;
  /** The test runner to register with (TestRunner); default node:test. */
  test?: TestRunner;
  /**
   * Opens a new handle on the one store under test. Handles opened by the same suite share
   * data; the suite closes every handle it opens.
   */
  makeStore: () => Promise<LeaseStore>;
  /** Capabilities to test for; default: what the first handle declares. */
  capabilities?: Partial<StoreCapabilities>;
  /** Shortest lease the store supports well, in ms (e.g. 1000 for etcd). Default 600. */
  minLeaseMs?: number;
  /** Fault hooks: each one present turns on the scenarios that need it (see StoreFaults). */
  faults?: StoreFaults;
  /**
   * Longest a call may take on an unreachable store before it must have failed, in ms: the
   * store's own call timeout plus its connect time. Default 5000.
   */
  callTimeoutMs?: number;
}

/**
 * StoreFaults are what a store's test file knows how to do to its server. Every hook is
 * optional; the suite runs only the scenarios whose hooks are given. Hooks act on the store
 * every handle from `makeStore` talks to.
 */
export interface StoreFaults {
  /** Kills the server (SIGKILL or as abrupt as the platform allows) and starts it again, data kept. */
  restart?(): Promise<void>;
  /** Kills the server; it stays down until `start()`. Give both or neither. */
  kill?(): Promise<void>;
  /** Starts the server `kill()` stopped, data kept. */
  start?(): Promise<void>;
  /** Freezes the server (SIGSTOP): connections stay open, nothing answers. Give both or neither. */
  freeze?(): Promise<void>;
  /** Thaws the server `freeze()` froze (SIGCONT). */
  thaw?(): Promise<void>;
  /** Drops every client connection at once (e.g. through a TCP proxy); the server stays up and new connections work. */
  cutConnections?(): Promise<void>;
  /** Drops only the change-feed connection(s) (a LISTEN session, a subscriber, a watch stream). */
  cutFeed?(): Promise<void>;
  /** Deletes the lease record of `lock` behind the store's back, as an operator would. */
  deleteRecord?(lock: string): Promise<void>;
  /** Opens a handle on a server that is not there (nothing listening, a missing path…). */
  makeUnreachableStore?(): Promise<LeaseStore>;
}

/** faultsOf returns the fault hooks of `o`, with `restart` made of `kill` and `start` when only those are given. */
export function faultsOf(o: ConformanceOptions): StoreFaults {
  const faults = { ...o.faults };
  if (!faults.restart && faults.kill && faults.start) {
    const { kill, start } = faults;
    faults.restart = async () => {
      await kill();
      await start();
    };
  }
  return faults;
}

let counter = 0;
/** uniqueLock returns a lock name no other test in this process uses. */
export function uniqueLock(prefix: string): string {
  // A store's display name may hold spaces or brackets ("mysql (MariaDB)"): not in a lock name.
  const safe = prefix.replace(/[^A-Za-z0-9._:/-]+/g, '-').replace(/^-+|-+$/g, '');
  return `conf-${safe}-${process.pid}-${Date.now().toString(36)}-${counter++}`;
}

/** acquireWrite builds the write an elector sends to acquire a lease. */
export function acquireWrite(holder: string, leaseDurationMs = 5_000, transitions = 1): LeaseWrite {
  const now = Date.now();
  return {
    holder,
    newTerm: true,
    leaseDurationMs,
    acquiredAt: now,
    renewedAt: now,
    transitions,
    stepDownRequested: false,
    metadata: { hostname: 'conformance', pid: process.pid },
  };
}

/**
 * acquire acquires `lock` as an elector would on either kind of store: a compare-and-set on
 * `expected` (create-if-absent when null), or, on a queue store, a campaign.
 */
export function acquire(store: LeaseStore, lock: string, expected: string | null, write: LeaseWrite): Promise<WriteResult> {
  return store.queue ? store.queue.campaign(lock, write) : store.write(lock, expected, write);
}

/** keepWrite builds a renewal (or, with holder null, a release) of an existing record. */
export function keepWrite(holder: string | null, leaseDurationMs = 5_000, transitions = 1): LeaseWrite {
  return { ...acquireWrite(holder ?? 'x', leaseDurationMs, transitions), holder, newTerm: false };
}

/** Handles tracks the store handles a test opened, and closes them. */
export class Handles {
  private readonly open: LeaseStore[] = [];
  constructor(private readonly make: () => Promise<LeaseStore>) {}
  async get(): Promise<LeaseStore> {
    const s = await this.make();
    this.open.push(s);
    return s;
  }
  async closeAll(): Promise<void> {
    await Promise.all(this.open.splice(0).map((s) => s.close().catch(() => {})));
  }
}

/** waitFor polls `check` every 10 ms until it returns a truthy value or `ms` pass. */
export async function waitFor<T>(check: () => T | Promise<T>, ms: number, what: string): Promise<NonNullable<T>> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > until) throw new Error(`timed out after ${ms}ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
