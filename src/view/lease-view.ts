/**
 * leaseView: the one way baton presents a lease record — to `baton status`, `baton is-leader`,
 * the dashboard's table and the sidecar's `GET /leader`. They all ask it whether a holder is
 * live, so they cannot disagree about an expired one: a holder whose lease ran out is shown as
 * free (holder null, no expiry), with its term and transitions kept.
 */
import { hostname } from 'node:os';
import type { LeaseRecord } from '../core/store.js';

/** LeaseView is a record as people and scripts see it. Times are ISO 8601; durations ms. */
export interface LeaseView {
  lock: string;
  /** The holder while its lease is live; null when the lock is free or the lease ran out. */
  holder: string | null;
  /** True when the record names a holder whose lease has not run out. */
  live: boolean;
  /** True when the record still names a holder but its lease ran out (nobody released it). */
  expired: boolean;
  /** Fencing token of the current (or last) lease; 0 before any. */
  term: number;
  /** The live holder's hostname, pid and baton version, from the lease's metadata. */
  hostname: string | null;
  pid: number | null;
  version: string | null;
  acquiredAt: string | null;
  renewedAt: string | null;
  leaseDurationMs: number;
  /** Time until a live lease runs out if not renewed; null when not live. */
  expiresInMs: number | null;
  transitions: number;
  stepDownRequested: boolean;
}

/** LeaseViewOptions says how to judge a record's expiry. */
export interface LeaseViewOptions {
  /** This host's wall clock now. Default Date.now(). */
  nowWallMs?: number;
  /** The store expires records itself (a record that exists is live). Default false. */
  serverExpiry?: boolean;
  /**
   * The exact time left, when the caller knows it better than the record does (the leader's
   * own monotonic deadline). Decides liveness too: 0 or less is expired.
   */
  exactExpiresInMs?: number;
}

/**
 * leaseView describes `record`. Without `exactExpiresInMs`, liveness compares the holder's
 * recorded renewal time with this host's clock, so it is advisory: exact for holders on this
 * host, approximate across hosts. Safety never rests on it (the elector and fencing do).
 */
export function leaseView(record: LeaseRecord, options: LeaseViewOptions = {}): LeaseView {
  const now = options.nowWallMs ?? Date.now();
  const named = record.holder !== null;
  const leftMs =
    options.exactExpiresInMs !== undefined ? options.exactExpiresInMs : options.serverExpiry ? Infinity : record.renewedAt + record.leaseDurationMs - now;
  const live = named && leftMs > 0;
  const meta = record.metadata;
  return {
    lock: record.lock,
    holder: live ? record.holder : null,
    live,
    expired: named && !live,
    term: record.term,
    hostname: live && typeof meta.hostname === 'string' ? meta.hostname : null,
    pid: live && typeof meta.pid === 'number' ? meta.pid : null,
    version: live && typeof meta.version === 'string' ? meta.version : null,
    acquiredAt: record.acquiredAt ? new Date(record.acquiredAt).toISOString() : null,
    renewedAt: record.renewedAt ? new Date(record.renewedAt).toISOString() : null,
    leaseDurationMs: record.leaseDurationMs,
    // A store with server-side expiry does not say when; the recorded renewal is the best guess.
    expiresInMs: live ? Math.max(0, Math.round(Number.isFinite(leftMs) ? leftMs : record.renewedAt + record.leaseDurationMs - now)) : null,
    transitions: record.transitions,
    stepDownRequested: record.stepDownRequested,
  };
}

/** freeLeaseView is the view of a lock that has never been held. */
export function freeLeaseView(lock: string): LeaseView {
  return {
    lock,
    holder: null,
    live: false,
    expired: false,
    term: 0,
    hostname: null,
    pid: null,
    version: null,
    acquiredAt: null,
    renewedAt: null,
    leaseDurationMs: 0,
    expiresInMs: null,
    transitions: 0,
    stepDownRequested: false,
  };
}

/**
 * deadLocalHolder returns the pid recorded in `record` when the holder ran on this host and
 * that process is gone, else undefined. A lease whose holder died is live until it runs out:
 * this lets status and release say why it is not renewed. (A pid reused by another process
 * reads as alive: the hint is then missing, never wrong the other way.)
 */
export function deadLocalHolder(record: LeaseRecord, thisHost = hostname()): number | undefined {
  const { hostname: host, pid } = record.metadata;
  if (record.holder === null || host !== thisHost || typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return undefined;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'ESRCH' ? pid : undefined;
  }
}
