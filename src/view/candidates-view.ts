/**
 * candidatesView: how `baton status` and the sidecar's `GET /candidates` present a lock's
 * candidate registry (core/candidates.ts) — every registered candidate, and who would be
 * preferred under each rule.
 *
 * "Last seen" is the wall time of the candidate's last beat *on its own clock*, and `live` here
 * compares it with this host's clock: a display guess, exact on one host, approximate across
 * hosts. Nothing decides on it: a handover proves liveness by the candidate's acceptance, and
 * the preference rule counts beats on the leader's own monotonic clock.
 */
import { formatDuration } from '../core/duration.js';
import { PREFER_VALUES, compareCandidates, listCandidates, successorOrder, type CandidateInfo, type Prefer } from '../core/candidates.js';
import type { LeaseStore } from '../core/store.js';

/** How many refresh periods without a beat before a candidate is shown as gone (as the elector's tracker counts). */
const STALE_AFTER_BEATS = 2.5;

/** CandidateRow is one registry entry as people and scripts see it. */
export interface CandidateRow {
  identity: string;
  host: string;
  pid: number;
  instance: string;
  appVersion: string | null;
  priority: number | null;
  labels: Record<string, string>;
  /** When it started campaigning (its own clock, ISO 8601). */
  startedAt: string;
  /** Its last beat, by its own clock (ISO 8601). */
  lastSeen: string;
  /** Milliseconds from lastSeen to this host's now (clocks may differ). */
  lastSeenAgoMs: number;
  refreshMs: number;
  /** Beating within 2.5 refresh periods of this host's clock (or kept by the store's presence), and not left. */
  live: boolean;
  /** Kept by the store's own lease or session (etcd, ZooKeeper): no beats; lastSeen is when it was announced. */
  presence: boolean;
  /** Why it left the election, if it did. */
  left: string | null;
  /** It holds the lock now. */
  leader: boolean;
}

/** CandidatesView is a lock's registry, with who would be preferred. */
export interface CandidatesView {
  lock: string;
  candidates: CandidateRow[];
  /**
   * Among live candidates: who would lead under each `--prefer` rule (the leader stays on a
   * tie: the rule moves leadership only to a strictly higher rank), and `onStop`, whom the
   * leader's graceful stop hands over to (priority, then newest version, then latest start;
   * a leader with --prefer ranks by its rule first).
   */
  preferred: Record<Prefer | 'onStop', string | null>;
  /** Says that lastSeen is each candidate's own clock. */
  clock: string;
}

/** candidatesView describes `entries` (one lock's registry) with `holder` leading, at this host's `nowWallMs`. */
export function candidatesView(lock: string, entries: readonly CandidateInfo[], holder: string | null, nowWallMs = Date.now()): CandidatesView {
  const rows = entries.map((e): CandidateRow => {
    const seen = Date.parse(e.at);
    return {
      identity: e.identity,
      host: e.host,
      pid: e.pid,
      instance: e.instance,
      appVersion: e.appVersion ?? null,
      priority: e.priority ?? null,
      labels: { ...(e.labels ?? {}) },
      startedAt: e.startedAt,
      lastSeen: e.at,
      lastSeenAgoMs: Math.max(0, nowWallMs - seen),
      refreshMs: e.refreshMs,
      live: !e.left && (e.presence === true || seen + e.refreshMs * STALE_AFTER_BEATS >= nowWallMs),
      left: e.left ?? null,
      presence: e.presence === true,
      leader: holder !== null && e.identity === holder,
    };
  });
  const live = entries.filter((_e, i) => rows[i]!.live);
  const leader = live.find((e) => e.identity === holder);
  const preferred = { onStop: live.filter((e) => e !== leader).sort(successorOrder(undefined))[0]?.identity ?? null } as CandidatesView['preferred'];
  for (const rule of PREFER_VALUES) {
    const top = [...live].sort(successorOrder(rule))[0];
    preferred[rule] = top && leader && compareCandidates(rule, top, leader) <= 0 ? leader.identity : (top?.identity ?? null);
  }
  return { lock, candidates: rows, preferred, clock: "lastSeen and startedAt are each candidate's own wall clock" };
}

/**
 * readCandidatesView reads `lock`'s registry from the store (presence and ledger): undefined
 * when the store keeps no registry (neither).
 */
export async function readCandidatesView(store: LeaseStore, lock: string, holder: string | null, nowWallMs = Date.now()): Promise<CandidatesView | undefined> {
  if (!store.ledger && !store.presence) return undefined;
  return candidatesView(lock, await listCandidates(store, lock), holder, nowWallMs);
}

/**
 * renderCandidates is the view as `baton status` prints it: the live candidates one per line (the
 * leader starred), how many left or went quiet (entries stay in the ledger), who is preferred.
 */
export function renderCandidates(view: CandidatesView): string[] {
  if (view.candidates.length === 0) return [];
  const live = view.candidates.filter((c) => c.live);
  const gone = view.candidates.length - live.length;
  const lines = [`  candidates: ${live.length} live${gone > 0 ? `, ${gone} left or not seen lately (baton status --json lists them)` : ''}; started and last seen by each candidate's own clock`];
  for (const c of live) {
    const labels = Object.entries(c.labels).map(([k, v]) => `${k}=${v}`).join(',');
    lines.push(
      `  ${c.leader ? '*' : ' '} ${c.identity} on ${c.host} pid ${c.pid}` +
        `${c.appVersion !== null ? `; version ${c.appVersion}` : ''}${c.priority !== null ? `; priority ${c.priority}` : ''}${labels ? `; ${labels}` : ''}` +
        `; started ${c.startedAt}${c.presence ? '; kept by its store session' : `; last seen ${formatDuration(c.lastSeenAgoMs)} ago`}`,
    );
  }
  const p = view.preferred;
  const name = (id: string | null) => id ?? 'nobody';
  if (live.length > 0) lines.push(`  preferred: newest ${name(p.newest)}, oldest ${name(p.oldest)}, priority ${name(p.priority)}; a graceful stop of the leader hands over to ${name(p.onStop)}`);
  return lines;
}
