import type { Clock, TimerHandle } from './clock.js';
import { InvalidConfigError, errorMessage } from './errors.js';
import type { Timing } from './options.js';
import type { LeaseStore } from './store.js';
import { directedHandoverRefusal, type HandoverOutcome } from './handover.js';
import {
  PREFER_VALUES,
  PRUNE_AFTER_BEATS,
  PresenceTracker,
  Registration,
  compareCandidates,
  listCandidateEntries,
  listCandidates,
  successorOrder,
  validateAppVersion,
  type CandidateInfo,
  type CandidateProfile,
  type Prefer,
} from './candidates.js';

/** CandidateOptions: what a candidate says of itself, and its preference rule (LeaderElectorOptions.candidate). */
export interface CandidateOptions extends CandidateProfile {
  /** Move leadership to a live candidate ranking strictly higher (core/candidates.ts). Default: none. */
  readonly prefer?: Prefer;
  /** How often the registry entry is beaten (and, with `prefer`, the leader looks). Default: the lease duration. */
  readonly refreshMs?: number;
}

/** What CandidateSide needs of its elector. */
export interface CandidateSideDeps {
  readonly store: LeaseStore;
  readonly lock: string;
  readonly identity: string;
  instance: string;
  readonly timing: Readonly<Timing>;
  readonly clock: Clock;
  readonly onError: (err: unknown) => void;
  readonly handover: (to: string) => Promise<HandoverOutcome>;
}

/** An elector-like emitter: what CandidateSide listens to. */
interface LeadershipEvents {
  on(e: 'elected' | 'stopped', f: () => void): unknown;
  off(e: 'elected' | 'stopped', f: () => void): unknown;
}

/**
 * CandidateSide is one elector's part in the candidate registry: it keeps the registry entry
 * (Registration), and while leading with a preference rule, looks at the registry every
 * refresh period and hands over once to a live candidate that ranks strictly higher and has
 * been present for a retry period. While leading on a store whose ledger can remove, it removes
 * the entries of candidates that are gone (core/candidates.ts, PRUNE_AFTER_BEATS). It also picks
 * the successor of a graceful stop.
 */
export class CandidateSide {
  private registration?: Registration;
  private readonly tracker = new PresenceTracker();
  private readonly prefer?: Prefer;
  private readonly profile: CandidateProfile;
  private readonly refreshMs: number;
  private timer?: TimerHandle;
  private sweepTimer?: TimerHandle;
  /** The last failure of a sweep, reported once until a sweep succeeds or fails otherwise. */
  private sweepError?: string;
  private leading = false;
  private handingOver = false;
  /** Instances that did not accept a handover, and until when (monotonic) they are passed over. */
  private readonly refused = new Map<string, number>();
  private events?: LeadershipEvents;
  private readonly onElected = () => {
    this.leading = true;
    if (this.prefer) this.schedule(this.deps.timing.retryPeriodMs);
    // On a store with presence the registry is not in the ledger: nothing there to prune.
    if (this.deps.store.ledger?.remove && !this.deps.store.presence) this.scheduleSweep(this.refreshMs);
  };
  private readonly onStopped = () => {
    this.leading = false;
    if (this.timer) this.deps.clock.clearTimer(this.timer);
    if (this.sweepTimer) this.deps.clock.clearTimer(this.sweepTimer);
    this.timer = this.sweepTimer = undefined;
  };

  constructor(options: CandidateOptions, private readonly deps: CandidateSideDeps) {
    const { prefer, refreshMs, appVersion, priority, labels } = options;
    if (prefer !== undefined && !PREFER_VALUES.includes(prefer)) throw new InvalidConfigError(`candidate.prefer: must be one of ${PREFER_VALUES.join(', ')}, got "${String(prefer)}"`);
    if (priority !== undefined && !Number.isSafeInteger(priority)) throw new InvalidConfigError(`candidate.priority: must be an integer, got ${String(priority)}`);
    if (refreshMs !== undefined && !(typeof refreshMs === 'number' && refreshMs >= 100 && refreshMs <= 3_600_000)) throw new InvalidConfigError(`candidate.refreshMs: must be 100 ms to 1 h, got ${String(refreshMs)}`);
    if (labels !== undefined && (typeof labels !== 'object' || Object.values(labels).some((v) => typeof v !== 'string'))) throw new InvalidConfigError('candidate.labels: must map names to strings');
    if (prefer !== undefined && !deps.store.ledger && !deps.store.presence) throw new InvalidConfigError(`candidate.prefer: the ${deps.store.kind} store has no ledger to keep the candidate registry in`);
    const refusal = directedHandoverRefusal(deps.store);
    if (prefer !== undefined && refusal) throw new InvalidConfigError(`candidate.prefer: ${refusal}`);
    this.prefer = prefer;
    this.profile = { ...(appVersion !== undefined ? { appVersion: validateAppVersion(appVersion, 'candidate.appVersion') } : {}), ...(priority !== undefined ? { priority } : {}), ...(labels !== undefined ? { labels: { ...labels } } : {}) };
    this.refreshMs = refreshMs ?? deps.timing.leaseDurationMs;
  }

  setInstance(instance: string): void {
    this.deps.instance = instance;
  }

  /** start registers, and listens to `events` for leadership (for the preference rule). */
  start(events?: LeadershipEvents): void {
    const { store, lock, identity, instance, clock, onError } = this.deps;
    if (!store.ledger && !store.presence) return;
    this.registration = new Registration(store, lock, identity, instance, this.profile, this.refreshMs, clock, onError);
    void this.registration.start();
    if ((this.prefer || (store.ledger?.remove && !store.presence)) && events) {
      this.events = events;
      events.on('elected', this.onElected);
      events.on('stopped', this.onStopped);
    }
  }

  async stop(): Promise<void> {
    this.onStopped();
    if (this.events) {
      this.events.off('elected', this.onElected);
      this.events.off('stopped', this.onStopped);
    }
    await this.registration?.stop();
  }

  list(): Promise<CandidateInfo[]> {
    return listCandidates(this.deps.store, this.deps.lock);
  }

  /**
   * successor is the best live candidate other than this one, for a graceful stop (undefined:
   * release instead): live by the beats this side counted, or (never counted) by a beat within
   * 2.5 refresh periods of our wall clock — only a guess, which the handover's acceptance step
   * checks.
   */
  async successor(): Promise<string | undefined> {
    if (!this.registration || directedHandoverRefusal(this.deps.store)) return undefined;
    const entries = (await this.list()).filter((e) => e.identity !== this.deps.identity && !e.left);
    const counted = new Set(this.tracker.update(entries, this.deps.clock.monotonicMs()).map((x) => x.info.identity));
    const now = this.deps.clock.wallMs();
    const live = entries.filter((e) => e.presence || counted.has(e.identity) || Date.parse(e.at) + e.refreshMs * 2.5 >= now);
    const ranked = live.sort(successorOrder(this.prefer));
    // On a queue store the line decides among equals: a successor is named only when it ranks
    // strictly above every other live candidate by the rule and priority (and app version), so
    // a release, which hands the lease to the next in line, is not turned into steps back.
    if (this.deps.store.queue && (ranked.length < 2 || successorOrder(this.prefer, false)(ranked[0]!, ranked[1]!) === 0)) return undefined;
    return ranked[0]?.identity;
  }

  private schedule(ms: number): void {
    if (this.timer) this.deps.clock.clearTimer(this.timer);
    this.timer = this.deps.clock.setTimer(() => void this.look(), ms);
  }

  private scheduleSweep(ms: number): void {
    if (this.sweepTimer) this.deps.clock.clearTimer(this.sweepTimer);
    this.sweepTimer = this.deps.clock.setTimer(() => void this.sweep(), ms);
  }

  /**
   * sweep: one pass of pruning, while leading. Removes each entry (but ours) whose beat this
   * side has seen unchanged for PRUNE_AFTER_BEATS of its refresh periods, at the version seen.
   */
  private async sweep(): Promise<void> {
    this.sweepTimer = undefined;
    const ledger = this.deps.store.ledger;
    if (!this.leading || !ledger?.remove) return;
    try {
      const entries = await listCandidateEntries(ledger, this.deps.lock);
      const nowMs = this.deps.clock.monotonicMs();
      this.tracker.update(entries.map((e) => e.info), nowMs);
      for (const e of entries) {
        if (!this.leading) break;
        if (e.info.identity === this.deps.identity) continue;
        const refreshMs = e.info.refreshMs > 0 ? e.info.refreshMs : this.refreshMs;
        if (this.tracker.silentMs(e.info, nowMs) >= PRUNE_AFTER_BEATS * refreshMs) await ledger.remove(e.key, e.version);
      }
      this.sweepError = undefined;
    } catch (err) {
      // A store that refuses removals (a Kubernetes Role without `delete`) says so once, not every sweep.
      if (errorMessage(err) !== this.sweepError) this.deps.onError(err);
      this.sweepError = errorMessage(err);
    }
    if (this.leading) this.scheduleSweep((PRUNE_AFTER_BEATS / 2) * this.refreshMs);
  }

  /** look: one pass of the preference rule, while leading. */
  private async look(): Promise<void> {
    this.timer = undefined;
    if (!this.leading || !this.prefer || !this.registration || this.handingOver) return;
    try {
      const nowMs = this.deps.clock.monotonicMs();
      const live = this.tracker.update(await this.list(), nowMs);
      if (!this.leading) return;
      const self = this.registration.info();
      const better = live
        .filter((x) => x.info.identity !== this.deps.identity && x.presentMs >= this.deps.timing.retryPeriodMs)
        .filter((x) => (this.refused.get(x.info.instance) ?? 0) <= nowMs)
        .filter((x) => compareCandidates(this.prefer!, x.info, self) > 0)
        .sort((a, b) => successorOrder(this.prefer)(a.info, b.info));
      const best = better[0]?.info;
      if (best) {
        this.handingOver = true;
        const r = await this.deps.handover(best.identity).finally(() => (this.handingOver = false));
        if (r.outcome === 'not-candidate') this.refused.set(best.instance, this.deps.clock.monotonicMs() + 3 * this.refreshMs);
      }
    } catch (err) {
      this.deps.onError(err);
    }
    if (this.leading) this.schedule(this.refreshMs);
  }
}
