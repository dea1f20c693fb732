/**
 * The served lock as this instance sees it, answered from the elector's memory: no store round
 * trip per request, so apps can ask on every request of their own.
 */
import { realClock, type Clock } from '../core/clock.js';
import type { LeaderElector, LeaderEvent, StoppedEvent } from '../core/elector.js';
import type { LeaseRecord } from '../core/store.js';
import { leaseView } from '../view/lease-view.js';
import type { Timeline, Sighting } from './timeline.js';

/** LeaderView is the JSON `GET /leader` answers with. */
export interface LeaderView {
  lock: string;
  /** Current holder as last seen, or null when the lease is free, expired or unknown. */
  holder: string | null;
  /** Fencing token of the current (or last) lease; 0 before any. */
  term: number;
  /** True while this instance leads (by its own monotonic deadline). */
  isSelf: boolean;
  /** This instance's identity. */
  identity: string;
  /** The holder's hostname, from the lease's metadata. */
  hostname: string | null;
  pid: number | null;
  /**
   * Time until the lease runs out if not renewed. Exact on the leader (its own monotonic
   * clock); on a standby, from the holder's recorded renewal time and this host's clock.
   */
  expiresInMs: number | null;
  /** When this instance first saw the current holder and term (ISO 8601), as seen. */
  since: string | null;
  /** When the holder says it acquired the lease (its own clock; informational). */
  acquiredAt: string | null;
  leaseDurationMs: number | null;
  /** Changes of holder recorded in the lease itself (every instance agrees on it). */
  transitions: number | null;
  /** Someone asked the holder to step down through the record. */
  stepDownRequested: boolean;
  /** False until the elector has reached the store once. */
  ready: boolean;
}

/**
 * LeaderTracker follows an elector's events: it feeds the timeline, remembers whether the
 * store has been reached, and builds LeaderView answers. Emits nothing itself; call `onChange`.
 */
export class LeaderTracker {
  private reached = false;
  private readonly listeners = new Set<() => void>();
  private readonly sampler: NodeJS.Timeout;
  private readonly offs: (() => void)[] = [];

  constructor(
    readonly elector: LeaderElector,
    readonly timeline: Timeline,
    private readonly clock: Clock = realClock,
  ) {
    const on = <K extends 'leader' | 'elected' | 'renewed' | 'stopped'>(event: K, fn: (...args: any[]) => void) => {
      elector.on(event, fn as never);
      this.offs.push(() => elector.off(event, fn as never));
    };
    on('leader', (e: LeaderEvent) => {
      this.reached = true;
      this.timeline.see(elector.lock, sightingOf(e.record));
      this.changed();
    });
    on('elected', () => {
      this.reached = true;
      this.changed();
    });
    on('renewed', () => {
      this.sample();
      this.changed();
    });
    on('stopped', (e: StoppedEvent) => {
      this.timeline.note(elector.lock, { holder: elector.identity, term: e.term, reason: e.reason });
      this.changed();
    });
    if (elector.leader()) {
      this.reached = true;
      this.sample();
    }
    // Standbys get no event per renewal; sampling the elector's memory keeps the timeline's
    // "last renewal seen" current for failover gaps, at no cost to the store.
    this.sampler = setInterval(() => this.sample(), Math.min(1000, elector.timing.retryPeriodMs)).unref();
  }

  /** ready is true once the elector has reached the store at least once. */
  get ready(): boolean {
    return this.reached;
  }

  /** onChange calls `fn` whenever the view may have changed; returns an unsubscribe function. */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** view answers `GET /leader`: the last record seen, presented by leaseView (lease-view.ts). */
  view(): LeaderView {
    const e = this.elector;
    const seen = e.leader();
    const r = seen?.record ?? null;
    const since = this.timeline.current(e.lock);
    const window = e.isLeader() ? e.leadershipWindow() : undefined;
    // The leader knows its expiry exactly, on its own monotonic clock; others go by the record.
    const exactExpiresInMs = window ? window.othersMayAcquireMs - this.clock.monotonicMs() : undefined;
    const v = r ? leaseView(r, { nowWallMs: this.clock.wallMs(), serverExpiry: e.store.capabilities.serverExpiry, exactExpiresInMs }) : undefined;
    return {
      lock: e.lock,
      holder: v?.holder ?? null,
      term: seen?.term ?? 0,
      isSelf: e.isLeader(),
      identity: e.identity,
      hostname: v?.hostname ?? null,
      pid: v?.pid ?? null,
      expiresInMs: v?.expiresInMs ?? null,
      since: since && since.holder !== null && since.holder === (v?.holder ?? null) ? new Date(since.since).toISOString() : null,
      acquiredAt: v?.live ? v.acquiredAt : null,
      leaseDurationMs: v?.leaseDurationMs ?? null,
      transitions: v?.transitions ?? null,
      stepDownRequested: v?.stepDownRequested ?? false,
      ready: this.reached,
    };
  }

  /** close stops following the elector. */
  close(): void {
    clearInterval(this.sampler);
    for (const off of this.offs.splice(0)) off();
    this.listeners.clear();
  }

  private sample(): void {
    const r = this.elector.leader()?.record;
    if (r) this.timeline.see(this.elector.lock, sightingOf(r));
  }

  private changed(): void {
    for (const fn of this.listeners) fn();
  }
}

/** sightingOf extracts what the timeline needs from a record. */
export function sightingOf(r: LeaseRecord | null): Sighting | null {
  if (!r) return null;
  return { holder: r.holder, term: r.term, hostname: str(r.metadata.hostname) ?? undefined, acquiredAt: r.acquiredAt, renewedAt: r.renewedAt };
}

function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}
