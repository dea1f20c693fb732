/**
 * The dashboard's table of locks: every lock the store can list (or just the served one), with
 * the served lock's row always taken from the elector's memory. Every row is presented by
 * leaseView (lease-view.ts), like `baton status`: an expired holder shows as free. The store is read only while someone
 * is watching (an open event stream) or asks for a snapshot, at most once per poll interval.
 */
import { errorMessage } from '../core/errors.js';
import type { LeaseRecord, LeaseStore } from '../core/store.js';
import type { LeaderTracker, LeaderView } from './leader-view.js';
import { sightingOf } from './leader-view.js';
import { leaseView, type LeaseView } from '../view/lease-view.js';
import { scrubSecrets } from './redact.js';
import type { Timeline } from './timeline.js';

/** LockRow is one line of the dashboard's table. */
export interface LockRow {
  lock: string;
  holder: string | null;
  term: number;
  hostname: string | null;
  /** Advisory for other locks (holder's recorded renewal vs this host's clock). */
  expiresInMs: number | null;
  leaseDurationMs: number | null;
  transitions: number | null;
  stepDownRequested: boolean;
  /** True for the lock this server's elector campaigns for. */
  served: boolean;
  /** True when this instance is the holder. */
  isSelf: boolean;
}

/** LockBoard keeps the list of locks fresh while it is being watched. */
export class LockBoard {
  private records: LeaseRecord[] = [];
  private fetchedAtMs = -Infinity;
  private inFlight?: Promise<void>;
  private timer?: NodeJS.Timeout;
  /** The last listing error (secrets scrubbed), or undefined after a successful listing. */
  error?: string;

  constructor(
    private readonly store: LeaseStore,
    private readonly tracker: LeaderTracker,
    private readonly timeline: Timeline,
    private readonly pollIntervalMs: number,
    private readonly onRefresh: () => void,
  ) {}

  /** rows is the table as last fetched, with the served lock's row from the elector. */
  rows(): LockRow[] {
    const served = this.tracker.view();
    const now = Date.now();
    const serverExpiry = this.store.capabilities.serverExpiry;
    const rows = this.records.filter((r) => r.lock !== served.lock).map((r) => rowOf(leaseView(r, { nowWallMs: now, serverExpiry })));
    rows.push(servedRow(served));
    return rows.sort((a, b) => (a.served === b.served ? a.lock.localeCompare(b.lock) : a.served ? -1 : 1));
  }

  /** refresh lists the store unless it was listed less than a poll interval ago. */
  refresh(force = false): Promise<void> {
    if (this.inFlight) return this.inFlight;
    if (!force && performance.now() - this.fetchedAtMs < this.pollIntervalMs / 2) return Promise.resolve();
    this.inFlight = (async () => {
      try {
        const lock = this.tracker.elector.lock;
        // Without list() there is nothing to fetch: the served lock's row comes from the elector.
        const list = this.store.list ? await this.store.list() : [];
        this.records = list;
        this.error = undefined;
        for (const r of list) if (r.lock !== lock) this.timeline.see(r.lock, sightingOf(r));
      } catch (err) {
        this.error = scrubSecrets(errorMessage(err));
      } finally {
        this.fetchedAtMs = performance.now();
        this.inFlight = undefined;
      }
      this.onRefresh();
    })();
    return this.inFlight;
  }

  /** watching starts or stops the poll (called with the number of open event streams). */
  watching(count: number): void {
    if (count > 0 && !this.timer) {
      this.timer = setInterval(() => void this.refresh(), this.pollIntervalMs).unref();
      void this.refresh(true);
    } else if (count === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** close stops polling. */
  close(): void {
    this.watching(0);
  }
}

function rowOf(v: LeaseView): LockRow {
  return {
    lock: v.lock,
    holder: v.holder,
    term: v.term,
    hostname: v.hostname,
    expiresInMs: v.expiresInMs,
    leaseDurationMs: v.leaseDurationMs,
    transitions: v.transitions,
    stepDownRequested: v.stepDownRequested,
    served: false,
    isSelf: false,
  };
}

function servedRow(v: LeaderView): LockRow {
  return {
    lock: v.lock,
    holder: v.holder,
    term: v.term,
    hostname: v.hostname,
    expiresInMs: v.expiresInMs,
    leaseDurationMs: v.leaseDurationMs,
    transitions: v.transitions,
    stepDownRequested: v.stepDownRequested,
    served: true,
    isSelf: v.isSelf,
  };
}
