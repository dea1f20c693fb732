/**
 * The election timeline: who led which lock when, as this server saw it. Kept in memory and
 * bounded; nothing here is read back from the store.
 */
import { EventEmitter } from 'node:events';

/**
 * TimelineKind says what changed:
 * - `observed`: a lease that was already held when this server first looked;
 * - `acquired`: a free (released or never held) lease was taken;
 * - `failover`: a new holder or term replaced a holder that never released — it expired;
 * - `released`: the holder let go (stop, resign, step-down);
 * - `stepped-down`: this instance stopped leading (with `reason`); its record may linger.
 */
export type TimelineKind = 'observed' | 'acquired' | 'failover' | 'released' | 'stepped-down';

/** TimelineEntry is one change. `at` is this server's wall clock, in ms since the epoch. */
export interface TimelineEntry {
  readonly seq: number;
  readonly at: number;
  readonly lock: string;
  readonly kind: TimelineKind;
  readonly holder: string | null;
  readonly term: number;
  readonly hostname?: string;
  /** The holder before this change, when there was one. */
  readonly previousHolder?: string;
  /**
   * For a failover: ms from the old holder's last renewal this server saw to the new holder's
   * acquisition, both as the holders' own clocks recorded them (advisory across hosts).
   */
  readonly afterLastRenewalMs?: number;
  /** For `stepped-down`: the elector's reason (renew-deadline, lost, resigned, …). */
  readonly reason?: string;
}

/** Sighting is what a timeline needs to know about a lease record. */
export interface Sighting {
  holder: string | null;
  term: number;
  hostname?: string;
  /** The holder's wall clock at acquisition / last renewal (informational). */
  acquiredAt?: number;
  renewedAt?: number;
}

interface LockState {
  holder: string | null;
  term: number;
  /** This server's wall clock when the current holder and term were first seen. */
  since: number;
  renewedAt?: number;
  lastHolder?: string;
}

/**
 * Timeline records changes of leadership per lock and keeps the last `limit` entries
 * (default 500). Emits `entry` for each one appended.
 */
export class Timeline extends EventEmitter<{ entry: [TimelineEntry] }> {
  private readonly entriesRing: TimelineEntry[] = [];
  private readonly locks = new Map<string, LockState>();
  private seq = 0;

  constructor(
    readonly limit = 500,
    private readonly wallMs: () => number = Date.now,
  ) {
    super();
  }

  /**
   * see reports the latest record of `lock` (null for none). Stale sightings (an older term)
   * are ignored; a sighting of the same holder and term only refreshes its renewal time.
   */
  see(lock: string, s: Sighting | null): TimelineEntry | undefined {
    const holder = s?.holder ?? null;
    const term = s?.term ?? 0;
    const prev = this.locks.get(lock);
    if (prev && term < prev.term) return undefined;
    if (prev && prev.holder === holder && prev.term === term) {
      if (s?.renewedAt !== undefined) prev.renewedAt = s.renewedAt;
      return undefined;
    }
    const now = this.wallMs();
    this.locks.set(lock, { holder, term, since: now, renewedAt: s?.renewedAt, lastHolder: holder ?? prev?.lastHolder ?? prev?.holder ?? undefined });
    if (!prev && holder === null) return undefined;
    let entry: Omit<TimelineEntry, 'seq' | 'at' | 'lock'>;
    if (holder === null) {
      entry = { kind: 'released', holder, term, previousHolder: prev!.holder ?? undefined };
    } else if (!prev) {
      entry = { kind: 'observed', holder, term, hostname: s?.hostname };
    } else if (prev.holder === null) {
      entry = { kind: 'acquired', holder, term, hostname: s?.hostname, previousHolder: prev.lastHolder };
    } else {
      const gap = s?.acquiredAt !== undefined && prev.renewedAt !== undefined ? s.acquiredAt - prev.renewedAt : undefined;
      entry = { kind: 'failover', holder, term, hostname: s?.hostname, previousHolder: prev.holder, afterLastRenewalMs: gap };
    }
    return this.append(lock, entry);
  }

  /** note records that this instance stopped leading `lock` (the lease may still name it). */
  note(lock: string, e: { holder: string; term: number; reason: string }): TimelineEntry {
    return this.append(lock, { kind: 'stepped-down', holder: e.holder, term: e.term, reason: e.reason });
  }

  /** current is the holder and term last seen for `lock`, with when this server first saw them. */
  current(lock: string): { holder: string | null; term: number; since: number } | undefined {
    const s = this.locks.get(lock);
    return s && { holder: s.holder, term: s.term, since: s.since };
  }

  /** entries returns the kept entries, oldest first. */
  entries(): TimelineEntry[] {
    return [...this.entriesRing];
  }

  private append(lock: string, e: Omit<TimelineEntry, 'seq' | 'at' | 'lock'>): TimelineEntry {
    const entry: TimelineEntry = Object.freeze({ seq: ++this.seq, at: this.wallMs(), lock, ...dropUndefined(e) });
    this.entriesRing.push(entry);
    if (this.entriesRing.length > this.limit) this.entriesRing.splice(0, this.entriesRing.length - this.limit);
    this.emit('entry', entry);
    return entry;
  }
}

function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
