import { EventEmitter } from 'node:events';
import { randomBytes } from 'node:crypto';
import { realClock, type Clock, type TimerHandle } from './clock.js';
import { LeaseLostError, StoreUnavailableError, errorMessage } from './errors.js';
import { defaultIdentity, processMetadata } from './identity.js';
import { TIMING_KEYS, checkOptionKeys, resolveTiming, validateIdentity, validateLockName, type Timing } from './options.js';
import { batcherFor } from './batcher.js';
import type { HolderMetadata, LeaseRecord, LeaseStore, LeaseWrite, WriteResult } from './store.js';

/** Why a leader stopped leading. */
export type StopReason =
  /** `stop()` was called. */
  | 'stopped'
  /** `resign()` was called: released so another candidate can take over. */
  | 'resigned'
  /** Someone asked the holder to step down through the record. */
  | 'step-down-requested'
  /** No successful renewal within renewDeadline; stepped down on its own clock. */
  | 'renew-deadline'
  /** The store showed another holder or a newer term. */
  | 'lost';

export interface ElectedEvent {
  readonly term: number;
  /** Aborted (with a LeaseLostError) the moment this leadership ends. */
  readonly signal: AbortSignal;
}
export interface StoppedEvent {
  readonly term: number;
  readonly reason: StopReason;
}
export interface LeaderEvent {
  /** Current holder, or null when nobody holds the lease. */
  readonly holder: string | null;
  readonly term: number;
  readonly isSelf: boolean;
  readonly record: LeaseRecord | null;
}
export interface RenewedEvent {
  readonly term: number;
  readonly durationMs: number;
}

export interface ElectorEvents {
  elected: [ElectedEvent];
  stopped: [StoppedEvent];
  leader: [LeaderEvent];
  renewed: [RenewedEvent];
  storeError: [Error];
}

/** LeaderElectorOptions configures one candidate for one lock. */
export interface LeaderElectorOptions extends Partial<Timing> {
  /** The coordination store (see openStore). */
  store: LeaseStore;
  /** The lock's name: 1–200 of [A-Za-z0-9._:/-]. */
  lock: string;
  /** Unique per candidate. Default `<hostname>-<pid>-<random>`. */
  identity?: string;
  /** Release the lease on stop() so a standby takes over at once. Default true. */
  releaseOnStop?: boolean;
  /** Extra holder metadata recorded in the lease. */
  metadata?: HolderMetadata;
  /** Time source; real by default. */
  clock?: Clock;
  /** Random source in [0, 1) for jitter; Math.random by default. */
  random?: () => number;
}

/** ELECTOR_OPTION_KEYS: every key LeaderElectorOptions has; any other is refused (a typo would leave a default in force). */
const ELECTOR_OPTION_KEYS = ['store', 'lock', 'identity', 'releaseOnStop', 'metadata', 'clock', 'random', ...TIMING_KEYS] as const;

interface Leadership {
  readonly term: number;
  record: LeaseRecord;
  /** Monotonic time at which the last successful write was sent. */
  renewStartMs: number;
  deadlineTimer?: TimerHandle;
  /** Rejects the renewal in flight (set while one is). */
  cancelRenewal?: (err: Error) => void;
  readonly controller: AbortController;
}

type State = 'idle' | 'running' | 'stopped';

/**
 * LeaderElector campaigns for one lock, holds it while it can renew, and steps down on its own
 * monotonic deadline. The rules, in the order `reconcile` applies them:
 *
 * 1. A free record (absent or released) is acquired with a compare-and-set; the store assigns
 *    a new, higher term — the fencing token.
 * 2. A held record is expired only by this process's own observation: the record's revision
 *    must stay unchanged for the holder's leaseDuration, timed on our monotonic clock from
 *    when we first saw that revision. No wall time written by another host is ever compared.
 *    Stores with server-side expiry remove the record themselves; we never take it over.
 * 3. The leader renews every retryPeriod. Its deadline is renewDeadline after the *start* of
 *    its last successful write. Any observer saw that write after it started, so it cannot
 *    count the lease expired before start + leaseDuration > start + renewDeadline: the leader
 *    has stopped (signal aborted, `stopped` emitted) before anyone else can acquire.
 * 4. Standbys on notifying stores sleep until the observed expiry and are woken by changes;
 *    on other stores, and while a store's change feed is down, they poll every retryPeriod
 *    with jitter.
 *
 * Events: `elected` {term, signal}, `stopped` {term, reason} (always after `elected`),
 * `leader` {holder, term, isSelf} for every change seen (standbys too), `renewed`, and
 * `storeError` (store failures are reported, never thrown at the caller).
 */
export class LeaderElector extends EventEmitter<ElectorEvents> {
  readonly lock: string;
  readonly identity: string;
  readonly timing: Readonly<Timing>;
  readonly store: LeaseStore;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly releaseOnStop: boolean;
  private readonly metadata: HolderMetadata;
  private readonly instance: string;

  private state: State = 'idle';
  private leadership?: Leadership;
  private observed?: { record: LeaseRecord | null; atMs: number };
  private lastLeaderKey = '';
  private wakeTimer?: TimerHandle;
  private unwatch?: () => void;
  private notified: LeaseRecord | null | undefined | typeof NOTHING = NOTHING;
  private running?: Promise<void>;
  private again = false;
  private pendingRelease?: LeaseRecord;
  private stepDownAsked = false;
  private holdOffUntilMs = 0;

  constructor(options: LeaderElectorOptions) {
    super();
    if (!options || typeof options.store?.write !== 'function') {
      throw new TypeError('LeaderElector: options.store must be a LeaseStore (see openStore)');
    }
    checkOptionKeys('LeaderElector', options, ELECTOR_OPTION_KEYS);
    this.store = options.store;
    this.lock = validateLockName(options.lock);
    this.identity = validateIdentity(options.identity ?? defaultIdentity());
    const timing = resolveTiming(options);
    const granularity = this.store.capabilities.leaseGranularityMs;
    if (granularity && timing.leaseDurationMs % granularity !== 0) {
      // A server that rounds the lease up only makes it longer than we count: still safe.
      timing.leaseDurationMs = Math.ceil(timing.leaseDurationMs / granularity) * granularity;
    }
    this.timing = Object.freeze(timing);
    this.clock = options.clock ?? realClock;
    this.random = options.random ?? Math.random;
    this.releaseOnStop = options.releaseOnStop ?? true;
    // `instance` tells this elector's own records from those of an earlier process that used
    // the same identity (see campaign()).
    this.instance = randomBytes(6).toString('hex');
    // Frozen: it goes into every record this elector writes, and stores may cache its encoding.
    this.metadata = Object.freeze(processMetadata({ ...options.metadata, instance: this.instance }));
  }

  /** start begins campaigning. Resolves at once; listen for `elected`. */
  start(): this {
    if (this.state !== 'idle') return this;
    this.state = 'running';
    if (this.store.capabilities.notify && this.store.watch) {
      this.unwatch = this.store.watch(this.lock, (record) => this.onNotify(record));
    }
    this.kick();
    return this;
  }

  /**
   * stop ends campaigning. A leader aborts its work, emits `stopped` ('stopped') and, unless
   * releaseOnStop is false, releases the lease so a standby takes over at once.
   */
  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    const wasRunning = this.state === 'running';
    this.state = 'stopped';
    this.clearWake();
    // Unwatch only after the release is sent: unsubscribing costs a round trip on some stores
    // and would delay the handover; notifications meanwhile are ignored (state is 'stopped').
    let unwatch = this.unwatch;
    this.unwatch = undefined;
    try {
      const l = this.leadership;
      if (l) this.stepDown('stopped');
      if (!wasRunning) return;
      // Neither a store call in flight nor the release may hold stop() longer than a renew
      // deadline each: leadership already ended above, whatever the store does.
      const bound = this.timing.renewDeadlineMs;
      if (this.running) await withDeadline(this.running, bound, this.clock).catch(() => {});
      const toRelease = this.pendingRelease ?? (l && this.releaseOnStop ? l.record : undefined);
      this.pendingRelease = undefined;
      if (toRelease && this.releaseOnStop) {
        const released = this.release(toRelease);
        unwatch?.();
        unwatch = undefined;
        await withDeadline(released, bound, this.clock).catch((err) => this.reportError(err));
      }
    } finally {
      unwatch?.();
    }
  }

  /**
   * resign gives up leadership (if held) and releases the lease, then keeps campaigning after
   * one retry period, so another candidate is likely to win first.
   */
  async resign(): Promise<void> {
    const l = this.leadership;
    if (!l) return;
    this.holdOff();
    this.stepDown('resigned');
    await this.release(l.record).catch((err) => this.reportError(err));
    this.observed = undefined;
  }

  /** isLeader tells, synchronously and by the monotonic deadline, whether this candidate leads. */
  isLeader(): boolean {
    const l = this.leadership;
    return !!l && this.clock.monotonicMs() < l.renewStartMs + this.timing.renewDeadlineMs;
  }

  /** term is the fencing token of the current leadership, or undefined when not leading. */
  get term(): number | undefined {
    return this.isLeader() ? this.leadership!.term : undefined;
  }

  /** signal of the current leadership (aborted when it ends), or undefined when not leading. */
  get signal(): AbortSignal | undefined {
    return this.leadership?.controller.signal;
  }

  /**
   * leadershipWindow describes the current leadership on the monotonic clock: when the last
   * successful write started, when this leader must have stopped (deadlineMs), and the earliest
   * moment any other candidate could acquire the lease (othersMayAcquireMs).
   */
  leadershipWindow(): { term: number; renewStartMs: number; deadlineMs: number; othersMayAcquireMs: number } | undefined {
    const l = this.leadership;
    if (!l) return undefined;
    return {
      term: l.term,
      renewStartMs: l.renewStartMs,
      deadlineMs: l.renewStartMs + this.timing.renewDeadlineMs,
      othersMayAcquireMs: l.renewStartMs + this.timing.leaseDurationMs,
    };
  }

  /** leader is the last record this candidate saw: who leads, with which term. */
  leader(): LeaderEvent | null {
    const record = this.leadership?.record ?? this.observed?.record ?? null;
    if (!record) return null;
    return { holder: record.holder, term: record.term, isSelf: !!this.leadership, record };
  }

  /** elected resolves with the next leadership (or the current one). */
  elected(options: { signal?: AbortSignal } = {}): Promise<ElectedEvent> {
    const l = this.leadership;
    if (l && this.isLeader()) return Promise.resolve({ term: l.term, signal: l.controller.signal });
    return new Promise((resolve, reject) => {
      const onElected = (e: ElectedEvent) => {
        options.signal?.removeEventListener('abort', onAbort);
        resolve(e);
      };
      const onAbort = () => {
        this.off('elected', onElected);
        reject(options.signal!.reason);
      };
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.once('elected', onElected);
    });
  }

  // ---- internals -------------------------------------------------------------------------

  private onNotify(record: LeaseRecord | null | undefined): void {
    if (this.state !== 'running') return;
    const l = this.leadership;
    if (l && record) {
      if (record.term < l.term) return; // a late message about an older term
      if (record.holder !== this.identity || record.term !== l.term) {
        this.stepDown('lost');
      } else if (record.stepDownRequested) {
        this.stepDownAsked = true;
      } else {
        return; // an echo of our own renewal
      }
    }
    this.notified = record;
    this.kick();
  }

  /** kick runs reconcile now, or once more after the run in flight. */
  private kick(): void {
    if (this.state !== 'running') return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.clearWake();
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.reconcile().catch((err) => {
            this.reportError(err);
            this.schedule(this.leadership ? this.timing.retryPeriodMs : this.jittered());
          });
        } while (this.again && this.state === 'running');
      } finally {
        this.running = undefined;
      }
    })();
  }

  private async reconcile(): Promise<void> {
    if (this.pendingRelease) {
      const record = this.pendingRelease;
      this.pendingRelease = undefined;
      await this.release(record).catch((err) => this.reportError(err));
    }
    if (this.state !== 'running') return;
    if (this.leadership) return this.renew(this.leadership);
    return this.campaign();
  }

  /** One campaign step: look at the record and acquire it if it is free or has expired. */
  private async campaign(): Promise<void> {
    const holdOffMs = this.holdOffUntilMs - this.clock.monotonicMs();
    if (holdOffMs > 0) {
      if (this.notified !== NOTHING && this.notified !== undefined) this.observe(this.notified);
      this.notified = NOTHING;
      return this.schedule(holdOffMs);
    }
    let record: LeaseRecord | null;
    if (this.notified !== NOTHING && this.notified !== undefined) {
      record = this.notified;
    } else {
      record = await this.store.read(this.lock);
    }
    this.notified = NOTHING;
    // A lost race hands back the winner's record: decide again without another read, a few times at most.
    for (let attempt = 0; attempt < 3 && this.state === 'running'; attempt++) {
      this.observe(record);
      const now = this.clock.monotonicMs();
      let expected: string | null;
      if (!record) {
        expected = null;
      } else if (record.holder === null || this.isOrphanOfOurs(record)) {
        expected = record.revision;
      } else if (this.store.capabilities.serverExpiry) {
        // The server removes an expired record; a live one is never taken over. Renewals there
        // may keep the revision (etcd keepalives), so once the record outlives the wait, count
        // the next look from now — never re-read in a loop.
        let waitMs = this.observed!.atMs + record.leaseDurationMs + this.timing.retryPeriodMs - now;
        if (waitMs <= 0) {
          this.observed!.atMs = now;
          waitMs = record.leaseDurationMs + this.timing.retryPeriodMs;
        }
        return this.waitForChange(waitMs);
      } else {
        const expiresAt = this.observed!.atMs + record.leaseDurationMs;
        if (now < expiresAt) return this.waitForChange(expiresAt - now);
        expected = record.revision;
      }
      const result = await this.tryAcquire(expected, record);
      if (result.ok || this.state !== 'running') return;
      if (result.current === undefined) break;
      record = result.current;
    }
    if (this.state === 'running' && !this.leadership) this.schedule(this.jittered());
  }

  /**
   * isOrphanOfOurs: a record this very elector wrote that backs no current leadership — an
   * acquisition whose reply was lost or came too late, or a lease it already stepped down
   * from. Nothing acts under it any more, so it is taken over at once (compare-and-set, new
   * term) instead of being waited out.
   */
  private isOrphanOfOurs(record: LeaseRecord): boolean {
    return record.holder === this.identity && record.metadata.instance === this.instance && !this.leadership;
  }

  private async tryAcquire(expected: string | null, prior: LeaseRecord | null): Promise<WriteResult> {
    const startMs = this.clock.monotonicMs();
    const wall = this.clock.wallMs();
    const result = await this.store.write(this.lock, expected, {
      holder: this.identity,
      newTerm: true,
      leaseDurationMs: this.timing.leaseDurationMs,
      acquiredAt: wall,
      renewedAt: wall,
      transitions: (prior?.transitions ?? 0) + 1,
      stepDownRequested: false,
      metadata: this.metadata,
    });
    if (!result.ok) return result;
    if (this.state !== 'running') {
      // stop() raced with our acquisition: hand the lease straight back.
      this.pendingRelease = result.record;
      return result;
    }
    if (this.clock.monotonicMs() >= startMs + this.timing.renewDeadlineMs) {
      // The answer came back after the deadline this write would have given us: others may
      // already count the lease as expired. Never lead on it; free it if it is still ours.
      this.pendingRelease = result.record;
      this.again = true;
      return { ok: false, current: undefined };
    }
    this.becomeLeader(result.record, startMs);
    return result;
  }

  private becomeLeader(record: LeaseRecord, startMs: number): void {
    const l: Leadership = { term: record.term, record, renewStartMs: startMs, controller: new AbortController() };
    this.leadership = l;
    this.stepDownAsked = false;
    this.armDeadline(l);
    this.observe(record);
    this.emit('elected', { term: l.term, signal: l.controller.signal });
    this.scheduleRenewal(startMs);
  }

  /**
   * armDeadline keeps one timer per leadership at its renew deadline. A renewal only ever moves
   * the deadline later, so the timer is not replaced on every renewal (10,000 leases would churn
   * 10,000 timers per period): when it fires before the current deadline it re-arms for the rest.
   * It also ends a renewal still waiting on the store, which must not hold the elector past it.
   */
  private armDeadline(l: Leadership): void {
    if (l.deadlineTimer) return;
    const remaining = l.renewStartMs + this.timing.renewDeadlineMs - this.clock.monotonicMs();
    l.deadlineTimer = this.clock.setTimer(() => {
      l.deadlineTimer = undefined;
      if (this.leadership !== l) return;
      if (this.clock.monotonicMs() < l.renewStartMs + this.timing.renewDeadlineMs) return this.armDeadline(l);
      l.cancelRenewal?.(new StoreUnavailableError(`elector: store did not answer within the renew deadline (${this.timing.renewDeadlineMs}ms)`));
      this.stepDown('renew-deadline');
      // Best effort: if our record is still there, free it so a standby need not wait it out.
      this.pendingRelease = l.record;
      this.kick();
    }, remaining);
  }

  /** One renewal: compare-and-set our own record with a fresh renewedAt. */
  private async renew(l: Leadership): Promise<void> {
    if (this.stepDownAsked || l.record.stepDownRequested) return this.stepDownAndRelease(l, 'step-down-requested');
    const startMs = this.clock.monotonicMs();
    let result: WriteResult;
    try {
      // No timer of its own: the leadership's deadline timer ends a renewal that waits too long.
      result = await new Promise<WriteResult>((resolve, reject) => {
        l.cancelRenewal = reject;
        batcherFor(this.store).renew({ lock: this.lock, expected: l.record.revision, next: renewal(l.record, this.clock.wallMs()) }).then(resolve, reject);
      });
    } catch (err) {
      if (this.leadership !== l) return;
      this.reportError(err);
      return this.schedule(this.timing.retryPeriodMs);
    }
    if (this.leadership !== l) {
      // We stepped down while the write was in flight; if it landed, our record must be freed.
      if (result.ok) this.pendingRelease = result.record;
      if (this.pendingRelease) this.kick();
      return;
    }
    if (result.ok) {
      l.record = result.record;
      l.renewStartMs = startMs; // the deadline timer, already set, reads the new deadline when it fires
      this.emit('renewed', { term: l.term, durationMs: this.clock.monotonicMs() - startMs });
      if (result.record.stepDownRequested) return this.stepDownAndRelease(l, 'step-down-requested');
      return this.scheduleRenewal(startMs);
    }
    // The record changed under us. Still ours (someone set the step-down flag)? Adopt it.
    const current = result.current !== undefined ? result.current : await this.store.read(this.lock);
    if (this.leadership !== l) return;
    if (current && current.holder === this.identity && current.term === l.term) {
      l.record = current;
      if (current.stepDownRequested) return this.stepDownAndRelease(l, 'step-down-requested');
      this.again = true;
      return;
    }
    this.stepDown('lost');
    this.observe(current);
    this.schedule(0);
  }

  private async stepDownAndRelease(l: Leadership, reason: StopReason): Promise<void> {
    this.holdOff();
    this.stepDown(reason);
    await this.release(l.record);
  }

  /**
   * holdOff keeps a candidate that gave the lease up on purpose from campaigning for one
   * jittered retry period, so a waiting standby wins the handover. Without it, the release's
   * own notification would wake this elector first.
   */
  private holdOff(): void {
    const ms = this.jittered();
    this.holdOffUntilMs = this.clock.monotonicMs() + ms;
    this.schedule(ms);
  }

  /** stepDown ends leadership at once: abort the signal, then emit `stopped`. Never awaits. */
  private stepDown(reason: StopReason): void {
    const l = this.leadership;
    if (!l) return;
    this.leadership = undefined;
    this.stepDownAsked = false;
    if (l.deadlineTimer) this.clock.clearTimer(l.deadlineTimer);
    l.controller.abort(new LeaseLostError(`elector: leadership of "${this.lock}" ended (${reason})`));
    this.emit('stopped', { term: l.term, reason });
  }

  /** release frees our record (compare-and-set to no holder), retrying once if only its flag changed. */
  private async release(record: LeaseRecord): Promise<void> {
    let expected = record;
    for (let attempt = 0; attempt < 3; attempt++) {
      const result = await this.store.write(this.lock, expected.revision, {
        ...renewal(expected, this.clock.wallMs()),
        holder: null,
        stepDownRequested: false,
      });
      if (result.ok) {
        this.observe(result.record);
        return;
      }
      const current = result.current !== undefined ? result.current : await this.store.read(this.lock);
      if (!current || current.holder !== this.identity || current.term !== record.term) return;
      expected = current;
    }
  }

  private observe(record: LeaseRecord | null): void {
    const prev = this.observed?.record;
    if (!this.observed || prev?.revision !== record?.revision || (prev === null) !== (record === null)) {
      this.observed = { record, atMs: this.clock.monotonicMs() };
    }
    const key = record ? `${record.holder}\u0000${record.term}` : '';
    if (key !== this.lastLeaderKey) {
      this.lastLeaderKey = key;
      this.emit('leader', {
        holder: record?.holder ?? null,
        term: record?.term ?? 0,
        isSelf: !!record && !!this.leadership && record.term === this.leadership.term,
        record,
      });
    }
  }

  /**
   * scheduleRenewal sets the next renewal on a grid of whole retry periods shared by every
   * elector in the process (multiples of retryPeriod on the monotonic clock), so leases held
   * through one store come due in the same turn of the event loop and the batcher renews them
   * in one round trip. After an acquisition the first renewal may come early (never sooner than
   * an eighth of a period) or up to an eighth late; from then on it is one period apart.
   */
  private scheduleRenewal(startMs: number): void {
    const period = this.timing.retryPeriodMs;
    let due = Math.floor((startMs + period) / period) * period;
    if (due - startMs < period / 8) due += period;
    this.schedule(due - this.clock.monotonicMs());
  }

  /** waitForChange sleeps until `ms` from now, or the next notification, or the next poll. */
  private waitForChange(ms: number): void {
    // A feed that is down hears nothing: poll as on a store without notify until it is back.
    const notifying = this.store.capabilities.notify && !!this.unwatch && this.store.watchLive !== false;
    this.schedule(notifying ? ms : Math.min(ms, this.jittered()));
  }

  private schedule(ms: number): void {
    if (this.state !== 'running') return;
    this.clearWake();
    this.wakeTimer = this.clock.setTimer(() => {
      this.wakeTimer = undefined;
      this.kick();
    }, Math.max(0, ms));
  }

  private clearWake(): void {
    if (this.wakeTimer) this.clock.clearTimer(this.wakeTimer);
    this.wakeTimer = undefined;
  }

  /** jittered is retryPeriod × (1 + random × jitterFactor). */
  jittered(): number {
    return this.timing.retryPeriodMs * (1 + this.random() * this.timing.jitterFactor);
  }

  private reportError(err: unknown): void {
    const e = err instanceof Error ? err : new StoreUnavailableError(errorMessage(err));
    if (this.listenerCount('storeError') > 0) this.emit('storeError', e);
  }
}

const NOTHING = Symbol('nothing');

function renewal(record: LeaseRecord, wallMs: number): LeaseWrite {
  return {
    holder: record.holder,
    newTerm: false,
    leaseDurationMs: record.leaseDurationMs,
    acquiredAt: record.acquiredAt,
    renewedAt: wallMs,
    transitions: record.transitions,
    stepDownRequested: record.stepDownRequested,
    metadata: record.metadata,
  };
}

/** withDeadline rejects with StoreUnavailableError if `p` takes longer than `ms`. */
function withDeadline<T>(p: Promise<T>, ms: number, clock: Clock): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = clock.setTimer(
      () => reject(new StoreUnavailableError(`elector: store did not answer within ${Math.round(ms)}ms`)),
      Math.max(0, ms),
    );
    p.then(
      (v) => {
        clock.clearTimer(timer);
        resolve(v);
      },
      (e) => {
        clock.clearTimer(timer);
        reject(e);
      },
    );
  });
}
