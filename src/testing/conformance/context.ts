import type { LeaseStore, LeaseWrite, StoreCapabilities, WriteResult } from '../../core/store.js';

/** ConformanceOptions describes the store under test to the conformance suite. */
export interface ConformanceOptions {
  /** Name shown in test titles, e.g. "sqlite". */
  name: string;
  /**
   * Opens a new handle on the one store under test. Handles opened by the same suite share
   * data; the suite closes every handle it opens.
   */
  makeStore: () => Promise<LeaseStore>;
  /** Capabilities to test for; default: what the first handle declares. */
  capabilities?: Partial<StoreCapabilities>;
  /** Shortest lease the store supports well, in ms (e.g. 1000 for etcd). Default 600. */
  minLeaseMs?: number;
  /** Restarts the store's server (data kept), for fencing across restarts. Optional. */
  restart?: () => Promise<void>;
}

let counter = 0;
/** uniqueLock returns a lock name no other test in this process uses. */
export function uniqueLock(prefix: string): string {
  return `conf-${prefix}-${process.pid}-${Date.now().toString(36)}-${counter++}`;
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
