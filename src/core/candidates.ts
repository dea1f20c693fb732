import { hostname } from 'node:os';
import type { Clock, TimerHandle } from './clock.js';
import { InvalidConfigError } from './errors.js';
import { Sightings, unchangedForMs } from './observation.js';
import type { Ledger, LeaseStore, Presence } from './store.js';

/**
 * The candidate registry: every campaigning candidate of a lock keeps one entry in the store's
 * ledger, `baton/candidates/<lock>/<identity>`, with who it is (identity, instance, host, pid,
 * start time, app version, priority, labels) and a beat counter it bumps every `refreshMs`. A
 * candidate that stops marks its entry as left; one that dies stops beating.
 *
 * Liveness is never decided on another host's clock for anything that matters: the directed
 * handover proves it (only a running candidate accepts, core/handover.ts), and the preference
 * rule counts beats on the leader's own monotonic clock (PresenceTracker). The wall time of the
 * last beat (`at`) is only shown, by `baton status`, as "last seen".
 *
 * Entries of candidates that are gone are removed by the leader (on a store whose ledger can
 * `remove`): one whose beat it has seen unchanged for PRUNE_AFTER_BEATS of the entry's refresh
 * periods, on its own monotonic clock — a dead candidate, or one that left (whose entry thus
 * stays visible, as left, for a while). The removal names the version the leader saw, so an
 * entry beaten meanwhile stays; a candidate whose entry was removed makes it again at its next
 * beat. So the registry holds the candidates of the last few minutes, not every identity ever.
 *
 * Cost at rest: one ledger write per candidate per refreshMs; one ledger list by the leader per
 * PRUNE_AFTER_BEATS / 2 refresh periods (per refreshMs with a preference rule), and one removal
 * per candidate gone. Stores without a ledger have no registry.
 *
 * A store with `presence` (etcd, ZooKeeper: core/store.ts) keeps the entries instead, with the
 * lease or session its candidates hold anyway: written once, never beaten, gone with their
 * candidate, never pruned. Cost at rest: none; the leader's list, with a preference rule, as
 * above. Listing reads both (an older baton, or a store's other handles, may use the ledger).
 */

/** CandidateInfo is one registry entry. */
export interface CandidateInfo {
  readonly identity: string;
  /** Tells this process from an earlier one with the same identity. */
  readonly instance: string;
  readonly host: string;
  readonly pid: number;
  /** Wall time the candidate started campaigning (ISO 8601). */
  readonly startedAt: string;
  readonly appVersion?: string;
  readonly priority?: number;
  readonly labels?: Readonly<Record<string, string>>;
  /** Bumped on every refresh. */
  readonly beat: number;
  /** The candidate's wall time of its last beat (ISO 8601; shown only). */
  readonly at: string;
  readonly refreshMs: number;
  /** Set when the candidate stopped campaigning: why. */
  readonly left?: string;
  /** Kept by the store's Presence: live while listed (its beat does not move). */
  readonly presence?: boolean;
}

/** Prefer: which live candidate leadership should move to (see compareCandidates). */
export type Prefer = 'newest' | 'oldest' | 'priority';
export const PREFER_VALUES: readonly Prefer[] = ['newest', 'oldest', 'priority'];

/** candidateKey is the ledger key of `identity`'s entry for `lock`. */
export const candidateKey = (lock: string, identity: string): string => `${candidatePrefix(lock)}${identity}`;
const candidatePrefix = (lock: string): string => `baton/candidates/${lock}/`;

function parseCandidate(value: string): CandidateInfo | undefined {
  try {
    const v = JSON.parse(value) as CandidateInfo;
    return v && typeof v.identity === 'string' && typeof v.instance === 'string' && typeof v.beat === 'number' ? v : undefined;
  } catch {
    return undefined;
  }
}

/** readCandidate is `identity`'s registry entry for `lock` (its presence entry first), or null. */
export async function readCandidate(source: RegistrySource, lock: string, identity: string): Promise<CandidateInfo | null> {
  const { ledger, presence } = sourcesOf(source);
  const found = presence ? (await presentCandidates(presence, lock)).find((c) => c.identity === identity) : undefined;
  if (found) return found;
  const entry = ledger ? await ledger.get(candidateKey(lock, identity)) : null;
  return (entry && parseCandidate(entry.value)) ?? null;
}

/** RegistrySource is where a lock's registry entries are: a store's presence and ledger, or a ledger alone. */
export type RegistrySource = Ledger | Pick<LeaseStore, 'ledger' | 'presence'>;

/**
 * listCandidates is every registry entry of `lock` (left ones included), in identity order: the
 * store's presence entries, and its ledger's entries of identities without one.
 */
export async function listCandidates(source: RegistrySource, lock: string): Promise<CandidateInfo[]> {
  const { ledger, presence } = sourcesOf(source);
  const [live, kept] = await Promise.all([presence ? presentCandidates(presence, lock) : [], ledger ? listCandidateEntries(ledger, lock) : []]);
  const shown = new Set(live.map((c) => c.identity));
  return [...live, ...kept.map((e) => e.info).filter((c) => !shown.has(c.identity))].sort((a, b) => (a.identity < b.identity ? -1 : a.identity > b.identity ? 1 : 0));
}

/** sourcesOf splits a RegistrySource into the ledger and the presence it reads. */
function sourcesOf(source: RegistrySource): Pick<LeaseStore, 'ledger' | 'presence'> {
  return 'put' in source ? { ledger: source } : source;
}

/** presentCandidates is the store's presence entries of `lock`, parsed and marked as such. */
async function presentCandidates(presence: Presence, lock: string): Promise<CandidateInfo[]> {
  return (await presence.list(lock)).flatMap((v) => {
    const info = parseCandidate(v);
    return info ? [{ ...info, presence: true }] : [];
  });
}

/** RegistryEntry is one registry entry with its ledger key and version (what a removal names). */
export interface RegistryEntry {
  readonly info: CandidateInfo;
  readonly key: string;
  readonly version: string;
}

/** listCandidateEntries is listCandidates with each entry's ledger key and version. */
export async function listCandidateEntries(ledger: Ledger, lock: string): Promise<RegistryEntry[]> {
  const prefix = candidatePrefix(lock);
  const entries = await ledger.list(prefix);
  // A lock whose name extends this one ("a" vs "a/b") has keys under the prefix too: skip them.
  return entries.filter((e) => !e.key.slice(prefix.length).includes('/')).flatMap((e) => {
    const info = parseCandidate(e.value);
    return info ? [{ info, key: e.key, version: e.version }] : [];
  });
}

/** PRUNE_AFTER_BEATS: refresh periods an entry's beat must stay unchanged before the leader removes it. */
export const PRUNE_AFTER_BEATS = 10;

/** validateAppVersion checks a semantic version (2.10.1, 3.0.0-rc.1, v1.2). */
export function validateAppVersion(v: unknown, what = 'appVersion'): string {
  if (typeof v !== 'string' || !/^v?\d+(\.\d+){0,2}(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/.test(v)) {
    throw new InvalidConfigError(`${what}: "${String(v)}" is not a semantic version (e.g. 2.4.1 or 3.0.0-rc.1)`);
  }
  return v;
}

/** compareVersions orders semantic versions (a pre-release below its release); negative if a < b. */
export function compareVersions(a: string, b: string): number {
  const split = (v: string) => {
    const [core, pre] = v.replace(/^v/, '').split('+')[0]!.split(/-(.*)/s);
    return { nums: core!.split('.').map(Number).concat([0, 0, 0]).slice(0, 3), pre };
  };
  const x = split(a);
  const y = split(b);
  for (let i = 0; i < 3; i++) if (x.nums[i] !== y.nums[i]) return x.nums[i]! - y.nums[i]!;
  if (x.pre === y.pre) return 0;
  if (x.pre === undefined) return 1;
  if (y.pre === undefined) return -1;
  const p = x.pre.split('.');
  const q = y.pre.split('.');
  for (let i = 0; i < Math.max(p.length, q.length); i++) {
    if (p[i] === undefined) return -1;
    if (q[i] === undefined) return 1;
    const [m, n] = [Number(p[i]), Number(q[i])];
    const d = Number.isInteger(m) && Number.isInteger(n) ? m - n : p[i]!.localeCompare(q[i]!);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * compareCandidates ranks `a` against `b` under `prefer`: positive when `a` ranks strictly
 * higher. newest: the higher app version (none is lowest); oldest: the earlier start; priority:
 * the higher priority (none is 0). Equal ranks are 0 — the rule then never moves leadership, so
 * two equal candidates never pass it back and forth.
 */
export function compareCandidates(prefer: Prefer, a: Pick<CandidateInfo, 'appVersion' | 'priority' | 'startedAt'>, b: Pick<CandidateInfo, 'appVersion' | 'priority' | 'startedAt'>): number {
  switch (prefer) {
    case 'newest':
      if (a.appVersion === undefined || b.appVersion === undefined) return a.appVersion !== undefined ? 1 : b.appVersion !== undefined ? -1 : 0;
      return Math.sign(compareVersions(a.appVersion, b.appVersion));
    case 'oldest':
      return Math.sign(Date.parse(b.startedAt) - Date.parse(a.startedAt));
    case 'priority':
      return Math.sign((a.priority ?? 0) - (b.priority ?? 0));
  }
}

/**
 * successorOrder ranks candidates for a leader that is leaving anyway: by `prefer` first when
 * set, then priority, app version, and (`byStart`) the latest start (the one likely to stay longest).
 */
export function successorOrder(prefer: Prefer | undefined, byStart = true): (a: CandidateInfo, b: CandidateInfo) => number {
  return (a, b) =>
    (prefer ? compareCandidates(prefer, b, a) : 0) ||
    compareCandidates('priority', b, a) ||
    compareCandidates('newest', b, a) ||
    (byStart ? Math.sign(Date.parse(b.startedAt) - Date.parse(a.startedAt)) : 0);
}

/**
 * PresenceTracker applies the observation rule (core/observation.ts) to registry entries, on the
 * caller's monotonic clock: a candidate is live while its beat was last seen to change within
 * `staleAfterBeats` of its refresh period (a presence entry: while listed); it has been present
 * since the first list that showed this instance of it.
 */
export class PresenceTracker {
  /** Each candidate's beat (with its instance), seen unchanged since when. */
  private readonly beats = new Sightings();
  /** Each candidate's instance, first seen when. */
  private readonly arrivals = new Sightings();
  constructor(private readonly staleAfterBeats = 2.5) {}

  /** update takes a fresh list at monotonic `nowMs`; returns the live entries, with how long each has been present. */
  update(entries: readonly CandidateInfo[], nowMs: number): { info: CandidateInfo; presentMs: number }[] {
    const live: { info: CandidateInfo; presentMs: number }[] = [];
    for (const info of entries) {
      const beat = this.beats.see(info.identity, beatVersion(info), nowMs);
      const arrived = this.arrivals.see(info.identity, info.instance, nowMs);
      if (!info.left && (info.presence || unchangedForMs(beat, nowMs) <= info.refreshMs * this.staleAfterBeats)) live.push({ info, presentMs: unchangedForMs(arrived, nowMs) });
    }
    const listed = new Set(entries.map((e) => e.identity));
    this.beats.keepOnly(listed);
    this.arrivals.keepOnly(listed);
    return live;
  }

  /** silentMs is how long (monotonic) `info`'s beat has been seen unchanged, as of the last update; 0 if never seen. */
  silentMs(info: CandidateInfo, nowMs: number): number {
    if (info.presence) return 0;
    const s = this.beats.get(info.identity);
    return s && s.version === beatVersion(info) ? unchangedForMs(s, nowMs) : 0;
  }
}

/** beatVersion is what changes with each beat of one process's entry. */
const beatVersion = (info: CandidateInfo): string => `${info.instance}\u0000${info.beat}`;

/** CandidateProfile is what a candidate says of itself in the registry. */
export interface CandidateProfile {
  readonly appVersion?: string;
  readonly priority?: number;
  readonly labels?: Readonly<Record<string, string>>;
}

/**
 * Registration keeps one candidate's entry: written at start, beaten every refreshMs, marked
 * left at stop. Failures are reported and retried at the next beat; they never affect leading.
 * On a store with `presence` it is announced once and withdrawn at stop, with no beats (a
 * failed announce is tried again every refreshMs until it lands).
 */
export class Registration {
  private beat = 0;
  private timer?: TimerHandle;
  private version: string | null | undefined;
  private stopped = false;
  private readonly startedAt: string;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly source: Pick<LeaseStore, 'ledger' | 'presence'>,
    private readonly lock: string,
    private readonly identity: string,
    private readonly instance: string,
    private readonly profile: CandidateProfile,
    readonly refreshMs: number,
    private readonly clock: Clock,
    private readonly onError: (err: unknown) => void,
  ) {
    this.startedAt = new Date(clock.wallMs()).toISOString();
  }

  /** info is the entry as this candidate would write it now. */
  info(left?: string): CandidateInfo {
    return {
      identity: this.identity,
      instance: this.instance,
      host: hostname(),
      pid: process.pid,
      startedAt: this.startedAt,
      ...(this.profile.appVersion !== undefined ? { appVersion: this.profile.appVersion } : {}),
      ...(this.profile.priority !== undefined ? { priority: this.profile.priority } : {}),
      ...(this.profile.labels !== undefined ? { labels: this.profile.labels } : {}),
      beat: this.beat,
      at: new Date(this.clock.wallMs()).toISOString(),
      refreshMs: this.refreshMs,
      ...(left !== undefined ? { left } : {}),
    };
  }

  start(): Promise<void> {
    return this.write();
  }

  /** stop marks the entry left, or withdraws a presence entry (awaitable; never throws). */
  async stop(reason = 'stopped'): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) this.clock.clearTimer(this.timer);
    await this.writing;
    const presence = this.source.presence;
    if (presence) await presence.withdraw(this.lock, this.identity).catch((err: unknown) => this.onError(err));
    else await this.put(reason);
  }

  private write(): Promise<void> {
    this.writing = this.put().then((landed) => {
      // A presence entry, once announced, is the store's to keep: no beats.
      if (!this.stopped && !(landed && this.source.presence)) this.timer = this.clock.setTimer(() => void this.write(), this.refreshMs);
    });
    return this.writing;
  }

  /** put writes the entry (announces it, on a store with presence); true when it landed. */
  private async put(left?: string): Promise<boolean> {
    const presence = this.source.presence;
    if (presence) {
      try {
        await presence.announce(this.lock, this.identity, JSON.stringify(this.info(left)));
        return true;
      } catch (err) {
        this.onError(err);
        return false;
      }
    }
    const ledger = this.source.ledger!;
    const key = candidateKey(this.lock, this.identity);
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        if (this.version === undefined) this.version = (await ledger.get(key))?.version ?? null;
        this.beat++;
        const result = await ledger.put(key, this.version, JSON.stringify(this.info(left)));
        if (result.ok) {
          this.version = result.entry.version;
          return true;
        }
        // Another process wrote it (an earlier one with this identity): ours replaces it.
        this.version = result.current === undefined ? undefined : (result.current?.version ?? null);
      }
    } catch (err) {
      this.version = undefined;
      this.onError(err);
    }
    return false;
  }
}
