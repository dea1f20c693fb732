import { EventEmitter } from 'node:events';
import { randomBytes } from 'node:crypto';
import { realClock, withDeadline, type Clock, type TimerHandle } from './clock.js';
import { InvalidConfigError, StoreUnavailableError, errorMessage } from './errors.js';
import { defaultIdentity, processMetadata } from './identity.js';
import { MAX_DURATION_MS, TIMING_KEYS, checkOptionKeys, resolveTiming, validateIdentity, validateLockName, type Timing } from './options.js';
import { Leadership } from './leadership.js';
import { renewalDueMs, sendRenewal } from './many-leases.js';
import { ReconcileLoop, STEP_PENDING, type StepOutcome } from './reconcile-loop.js';
import { nextElected, type ElectedEvent, type ElectorEvents, type LeaderElectorOptions, type LeaderEvent, type StopReason, type StoppedEvent } from './elector-events.js';
import { acquisitionWrite, releaseWrite } from './lease-writes.js';
import { decideClaim } from './claim-decision.js';
import { sight, type Sighting } from './observation.js';
import { stepDownNoteOf as noteOf } from './step-down.js';
import type { HolderMetadata, LeaseQueue, LeaseRecord, LeaseStore, LeaseWrite, WriteResult } from './store.js';
import type { PendingRenewal, RenewalAnswer } from './batcher.js';
import { HangStreak, recordStepDown } from './hang-backoff.js';
import { acceptWrite, askAndAwaitAcceptance, giveLease, handedTo, promisedTo, handoverAcceptedBy, handoverAskedOf, requestHandover, takeWrite, type HandoverOptions, type HandoverOutcome } from './handover.js';
import { CandidateSide } from './candidate-side.js';

export type { ElectedEvent, ElectorEvents, LeaderElectorOptions, LeaderEvent, RenewedEvent, StopReason, StoppedEvent } from './elector-events.js';

/** ELECTOR_OPTION_KEYS: every key LeaderElectorOptions has; any other is refused (a typo would leave a default in force). */
const ELECTOR_OPTION_KEYS = ['store', 'lock', 'identity', 'releaseOnStop', 'metadata', 'clock', 'random', 'progressTimeoutMs', 'beforeRelease', 'candidate', ...TIMING_KEYS] as const;

/**
 * LeaderElector campaigns for one lock, holds it while it can renew, and steps down on its own
 * monotonic deadline. Its rules, numbered where they are applied:
 *
 * 1. (campaignForRecord; decided in claim-decision.ts) On a compare-and-set store, a free record
 *    (absent or released) is acquired with a compare-and-set; the store assigns a new, higher
 *    term — the fencing token.
 * 2. (campaignForRecord; claim-decision.ts) A held record is expired only by this process's own
 *    observation: its revision must stay unchanged for the holder's leaseDuration, timed on
 *    our monotonic clock from when we first saw that revision (the observation rule,
 *    core/observation.ts). No wall time written by another host is compared.
 *    Stores with server-side expiry remove the record themselves; we never take it over. (Where
 *    the feed reports every renewal, we send a create-if-absent once the server's timer must
 *    have run out: the server, not we, decides whether the record is gone.) A claim at an
 *    expiry we timed is written at once: the compare-and-set is the check, no read first.
 * 3. (campaignInQueue) On a queue store, a candidate enqueues and leads once its entry is at the
 *    front; the term is the entry's creation sequence. It never takes over anyone's entry. A
 *    store may claim a front entry with no round trip: its deadline (rule 4) then counts from
 *    the send of the last refresh of the entry's lease that the server answered.
 * 4. (accept, renew) Leading means holding the lease with the local deadline not passed. The
 *    deadline is renewDeadline after the *start* of the last successful write. Any observer saw
 *    that write after it started, so it cannot count the lease expired before start +
 *    leaseDuration > start + renewDeadline: the leader has stopped (signal aborted, `stopped`
 *    emitted) before anyone else can acquire. A write answered after its own deadline is never
 *    led on.
 * 6. (campaignForRecord, campaignInQueue, renew, give) Directed handover (core/handover.ts): a
 *    standby named in the leader's record accepts; the leader seeing the acceptance stops its
 *    work as on a step-down, then writes the record to the successor with a new term; the
 *    successor takes it with its own compare-and-set, and leads from that write's start (rule
 *    4). On a queue store the entries ahead of the one named step back first, the one named
 *    accepts once right behind the front, the give is a release, the take a claim (rule 3).
 * 5. (waitForChange) Standbys on watchable stores sleep until the observed expiry (with no timer
 *    where the live feed reports the server's removals) and are woken by changes; on other
 *    stores, and while a store's change feed is down, they poll every retryPeriod with jitter.
 *
 * Events: `elected` {term, signal}, `stopped` {term, reason} (always after `elected`), `leader`
 * {holder, term, isSelf} for every change seen, `renewed`, and `storeError` (never thrown at the
 * caller). Throughput helpers (renewal grid, batching, lazy deadline timers): many-leases.ts.
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

  private state: 'idle' | 'running' | 'stopped' = 'idle';
  private leadership?: Leadership;
  /** The record as last seen, and since when its revision is unchanged (rule 2; core/observation.ts). */
  private observed?: { record: LeaseRecord | null; seen: Sighting };
  private lastLeaderKey = '';
  private unwatch?: () => void;
  private notified: LeaseRecord | null | undefined | typeof NOTHING = NOTHING;
  private readonly loop: ReconcileLoop;
  /** Hears every renewal's outcome (made once: see renew()). */
  private readonly renewalAnswer: RenewalAnswer;
  private pendingRelease?: LeaseRecord;
  /** Set when a notification showed a step-down request, with the requester's reason if any. */
  private stepDownAsked?: { note?: string };
  private holdOffUntilMs = 0;
  /** The server-expired revision we last tried to claim at its expiry (rule 2), so we try once. */
  private claimedRevision?: string;
  /** The revision whose expiry the pending timer is for (see expiryDue). */
  private timedExpiry?: string;
  /** While `elected` listeners run: a `stopped` raised meanwhile is held until they are done. */
  private announcing = false;
  private deferredStop?: StoppedEvent;
  /** beforeRelease: the work of a term has stopped (see the option). */
  private readonly beforeRelease?: (term: number) => Promise<void>;
  /** progressTimeoutMs: the work's heartbeats keep leadership (see the option). */
  private readonly progressTimeoutMs?: number;
  /** The pending "no progress" timer of the current leadership, and the leadership it is for. */
  private progress?: { timer: TimerHandle; l: Leadership; sinceMs: number };
  private readonly hangStreak?: HangStreak;
  /** The registry entry and preference rule of this candidate (core/candidate-side.ts), if any. */
  private readonly side?: CandidateSide;
  /** While handOff() waits for a successor's acceptance: woken by every notification of the lock. */
  private readonly stopListeners = new Set<() => void>();

  constructor(options: LeaderElectorOptions) {
    super();
    if (!options || typeof options.store?.write !== 'function') {
      throw new TypeError('LeaderElector: options.store must be a LeaseStore (see openStore)');
    }
    checkOptionKeys('LeaderElector', options, ELECTOR_OPTION_KEYS);
    this.store = options.store;
    this.lock = validateLockName(options.lock);
    this.identity = validateIdentity(options.identity ?? defaultIdentity());
    this.timing = Object.freeze(resolveTiming(options, this.store.capabilities.leaseGranularityMs));
    this.clock = options.clock ?? realClock;
    this.random = options.random ?? Math.random;
    if (options.progressTimeoutMs !== undefined) {
      const v = options.progressTimeoutMs;
      if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > MAX_DURATION_MS) {
        throw new InvalidConfigError(`progressTimeoutMs: must be a positive number of milliseconds up to 24h, got ${String(v)}`);
      }
      this.progressTimeoutMs = v;
      this.hangStreak = new HangStreak(v);
    }
    this.releaseOnStop = options.releaseOnStop ?? true;
    if (options.beforeRelease !== undefined && typeof options.beforeRelease !== 'function') {
      throw new InvalidConfigError(`beforeRelease: must be a function returning a promise, got ${typeof options.beforeRelease}`);
    }
    this.beforeRelease = options.beforeRelease;
    if (options.candidate !== undefined) {
      this.side = new CandidateSide(options.candidate, {
        store: this.store,
        lock: this.lock,
        identity: this.identity,
        instance: '',
        timing: this.timing,
        clock: this.clock,
        onError: (err) => this.reportError(err),
        handover: (to) => this.handover(to, { ackTimeoutMs: this.timing.leaseDurationMs }),
      });
    }
    // `instance` tells this elector's own records from those of an earlier process that used
    // the same identity (see isOrphanOfOurs()).
    this.instance = randomBytes(6).toString('hex');
    // Frozen: it goes into every record this elector writes, and stores may cache its encoding.
    this.metadata = Object.freeze(processMetadata({ ...options.metadata, instance: this.instance }));
    this.side?.setInstance(this.instance);
    this.loop = new ReconcileLoop(this.clock, () => this.state === 'running', () => this.reconcile(), (err) => {
      this.reportError(err);
      this.loop.schedule(this.leadership ? this.timing.retryPeriodMs : this.jittered());
    });
    // A renewal's answer ends the loop's step, once any follow-up it starts is done.
    this.renewalAnswer = (p, result, err) => {
      let next: Promise<void> | void;
      try {
        next = this.renewalAnswered(p, result, err);
      } catch (e) {
        return this.loop.stepFailed(e);
      }
      if (next) next.then(this.loop.stepDone, this.loop.stepFailed);
      else this.loop.stepDone();
    };
  }

  /** start begins campaigning. Resolves at once; listen for `elected`. */
  start(): this {
    if (this.state !== 'idle') return this;
    this.state = 'running';
    this.unwatch = this.store.watch?.(this.lock, (record) => this.onNotify(record));
    this.side?.start(this);
    this.loop.kick();
    return this;
  }

  /**
   * stop ends campaigning. A leader aborts its work, emits `stopped` ('stopped') and, unless
   * releaseOnStop is false, releases the lease so a standby takes over at once. A candidate
   * waiting in a queue store's line leaves it.
   */
  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    const wasRunning = this.state === 'running';
    this.state = 'stopped';
    this.loop.clear();
    // Unwatch only after the release is sent: unsubscribing costs a round trip on some stores and
    // would delay the handover; notifications meanwhile are ignored (state is 'stopped').
    let unwatch = this.unwatch;
    this.unwatch = undefined;
    try {
      const l = this.leadership;
      if (l) this.stepDown('stopped');
      if (!wasRunning) return;
      // Neither a store call in flight nor the release may hold stop() longer than a renew
      // deadline each: leadership already ended above, whatever the store does.
      const bound = this.timing.renewDeadlineMs;
      if (this.loop.inFlight) await withDeadline(this.loop.inFlight, bound, this.clock).catch(() => {});
      const toRelease = this.pendingRelease ?? (l && this.releaseOnStop ? l.record : undefined);
      this.pendingRelease = undefined;
      if (toRelease && this.releaseOnStop) {
        // 6. With a registry, a graceful stop hands over to the best live candidate instead of a race.
        // The record to give is the leadership's own, or the one a renewal still in flight at the
        // stop wrote for it (renewalAnswered leaves it in pendingRelease): the same term either way.
        const handing = !!this.side && !!l && toRelease.holder === this.identity && toRelease.term === l.term;
        const released = handing ? this.handOff(toRelease) : this.release(toRelease);
        // A handover waits for the successor's acceptance, which the watch reports: keep it until done.
        if (!handing) {
          unwatch?.();
          unwatch = undefined;
        }
        await withDeadline(released, bound, this.clock).catch((err) => this.reportError(err));
      }
      if (this.store.queue) await withDeadline(this.store.queue.withdraw(this.lock, this.identity), bound, this.clock).catch((err) => this.reportError(err));
    } finally {
      unwatch?.();
      await this.side?.stop();
    }
  }

  /**
   * handover hands this lock to candidate `to` (directed, drain-first: core/handover.ts) and
   * resolves once `to` leads — from any candidate, leading or not. Outcomes: handed, already
   * (`to` leads), not-held (nobody holds it, or on a standby: `from` set to the leader), not-candidate
   * (`to` did not accept: nothing changed), moved (the lease went elsewhere meanwhile).
   */
  handover(to: string, options: Omit<HandoverOptions, 'clock'> = {}): Promise<HandoverOutcome> {
    return requestHandover(this.store, this.lock, to, { clock: this.clock, ...options });
  }

  /** candidates lists the lock's registered candidates (needs `candidate` and a store with a ledger). */
  candidates(): Promise<import('./candidates.js').CandidateInfo[]> {
    return this.side ? this.side.list() : Promise.resolve([]);
  }

  /**
   * resign gives up leadership (if held) and releases the lease, then campaigns again after a
   * retry period (a standby likely wins first). With `reason: 'hung'` (a runner that stopped its
   * hung work first, like `baton run --progress-timeout`), `stopped` says 'hung' with `note`,
   * the store's ledger keeps why (core/hang-backoff.ts's LastStepDown), and the candidate waits
   * `holdOffMs` before campaigning again.
   */
  async resign(options: { reason?: 'hung'; note?: string; holdOffMs?: number } = {}): Promise<void> {
    const l = this.leading();
    if (!l) return;
    this.holdOff(options.holdOffMs);
    this.stepDown(options.reason ?? 'resigned', options.note);
    await this.handOff(l.record).catch((err) => this.reportError(err));
    if (options.reason === 'hung') await this.recordHung(l, options.note, options.holdOffMs);
    this.observed = undefined;
  }

  /** isLeader tells, synchronously and by the monotonic deadline, whether this candidate leads. */
  isLeader(): boolean {
    return !!this.leading();
  }

  /** term is the fencing token of the current leadership, or undefined when not leading. */
  get term(): number | undefined {
    return this.leading()?.term;
  }

  /** signal of the current leadership (aborted when it ends), or undefined when not leading. */
  get signal(): AbortSignal | undefined {
    return this.leading()?.controller.signal;
  }

  /**
   * leadershipWindow is the current leadership on the monotonic clock: its last successful write's
   * start, its deadline, and the earliest moment another candidate could acquire (othersMayAcquireMs).
   */
  leadershipWindow(): { term: number; renewStartMs: number; deadlineMs: number; othersMayAcquireMs: number } | undefined {
    const l = this.leading();
    return l && { term: l.term, renewStartMs: l.renewStartMs, deadlineMs: l.deadlineMs, othersMayAcquireMs: l.renewStartMs + this.timing.leaseDurationMs };
  }

  /** leader is the last record this candidate saw: who leads, with which term. */
  leader(): LeaderEvent | null {
    const l = this.leading();
    const record = l?.record ?? this.observed?.record ?? null;
    if (!record) return null;
    return { holder: record.holder, term: record.term, isSelf: !!l, record };
  }

  /** elected resolves with the next leadership (or the current one). */
  elected(options: { signal?: AbortSignal } = {}): Promise<ElectedEvent> {
    const l = this.leading();
    if (l) return Promise.resolve(this.electedEvent(l));
    return nextElected(this, options.signal);
  }

  /** jittered is retryPeriod × (1 + random × jitterFactor). */
  jittered(): number {
    return this.timing.retryPeriodMs * (1 + this.random() * this.timing.jitterFactor);
  }

  /**
   * leading is the one definition of leading (rule 4): holding the lease with its local
   * deadline not passed. A leadership found past its deadline ends here and now, as its
   * deadline timer would have, so isLeader, term, signal and leader() always agree.
   */
  private leading(): Leadership | undefined {
    const l = this.leadership;
    if (l && this.clock.monotonicMs() >= l.deadlineMs) this.deadlinePassed(l);
    return this.leadership;
  }
  private onNotify(record: LeaseRecord | null | undefined): void {
    // A leader handing off (handOff, also from stop()) hears the successor's acceptance here.
    for (const f of this.stopListeners) f();
    if (this.state !== 'running') return;
    const l = this.leadership;
    if (l && record) {
      if (record.term < l.term) return; // a late message about an older term
      if (record.holder !== this.identity || record.term !== l.term) {
        this.stepDown('lost');
      } else if (handoverAskedOf(record) !== undefined || handoverAskedOf(l.record) !== undefined) {
        // 6. A handover asked or accepted: adopt the record, so our next write compares on it
        // (a renewal out meanwhile is refused, reads the record and adopts it then).
        if (record.revision === l.record.revision || l.renewal) return;
        l.record = record;
        if (handoverAcceptedBy(record) === undefined) return;
      } else if (record.stepDownRequested) {
        this.stepDownAsked = { note: noteOf(record) ?? this.stepDownAsked?.note };
      } else {
        return; // an echo of our own renewal
      }
    }
    this.notified = record;
    this.loop.kick();
  }

  private reconcile(): StepOutcome {
    // A leader's step is its renewal, taken without an async frame (it is most steps there are).
    const l = this.leadership;
    if (l && !this.pendingRelease && this.state === 'running') return this.renew(l);
    return this.reconcileOther();
  }

  private async reconcileOther(): Promise<void> {
    if (this.pendingRelease) {
      const record = this.pendingRelease;
      this.pendingRelease = undefined;
      await this.release(record).catch((err) => this.reportError(err));
    }
    if (this.state !== 'running') return;
    if (this.leadership) return this.loop.again(); // renew on the next run
    const holdOffMs = this.holdOffUntilMs - this.clock.monotonicMs();
    if (holdOffMs > 0) {
      if (this.notified !== NOTHING && this.notified !== undefined) this.observe(this.notified);
      this.notified = NOTHING;
      return this.loop.schedule(holdOffMs);
    }
    return this.store.queue ? this.campaignInQueue(this.store.queue) : this.campaignForRecord();
  }

  /** One campaign step on a compare-and-set store: acquire the record if it is free or has expired. */
  private async campaignForRecord(): Promise<void> {
    // A notification that carried the record saves a read; so does a record whose expiry we
    // were timing (the write below compares its revision: that is the check).
    let record = this.notified !== NOTHING && this.notified !== undefined ? this.notified : (this.expiryDue() ?? (await this.store.read(this.lock)));
    this.notified = NOTHING;
    // A lost race hands back the winner's record: decide again without another read, a few times at most.
    for (let attempt = 0; attempt < 3 && this.state === 'running'; attempt++) {
      // 6. A record handed to this very instance: take it (the term was made for us).
      if (record && record.holder === this.identity && handedTo(record) === this.instance) {
        const startMs = this.clock.monotonicMs();
        const taken = await this.store.write(this.lock, record.revision, takeWrite(record, this.timing.leaseDurationMs, this.clock.wallMs(), this.metadata));
        if (taken.ok) return this.accept(taken.record, startMs);
        if (!('current' in taken) || taken.current === undefined) break;
        record = taken.current;
        continue;
      }
      // 6. Our own record, promised to a successor whose give did not get through: give it now
      // (our work stopped when we stepped down for it), never take it back as an orphan.
      const promised = record && this.isOrphanOfOurs(record) ? promisedTo(record) : undefined;
      if (promised && promised.instance !== this.instance) {
        const given = await giveLease(this.store, this.lock, record!, promised, this.timing.leaseDurationMs, this.clock);
        if (given.outcome === 'withdrawn') await this.releaseNow(given.record!);
        if (given.outcome === 'given') this.observe(given.record);
        if (given.outcome !== 'moved') break;
        record = given.record;
        continue;
      }
      // 6. The leader was asked to hand over to us: accept, then wait for its record as usual.
      if (record && record.holder !== this.identity && handoverAskedOf(record) === this.identity && handoverAcceptedBy(record) === undefined) {
        const accepted = await this.store.write(this.lock, record.revision, acceptWrite(record, this.instance));
        if (!accepted.ok && accepted.current === undefined) break;
        record = accepted.ok ? accepted.record : accepted.current!;
        continue;
      }
      this.observe(record);
      // 1–2. What the record allows: write now, or wait for its expiry (claim-decision.ts).
      const decision = decideClaim(record, {
        nowMs: this.clock.monotonicMs(),
        observedAtMs: this.observed!.seen.sinceMs,
        serverExpiry: this.store.capabilities.serverExpiry,
        hearsRenewals: this.hearsRenewals(),
        claimedRevision: this.claimedRevision,
        orphanOfOurs: !!record && this.isOrphanOfOurs(record),
        retryPeriodMs: this.timing.retryPeriodMs,
      });
      if (decision.kind === 'waitForExpiry') return this.waitForExpiry(record!, decision.ms);
      if (decision.kind === 'waitForRemoval') {
        this.observed!.seen = { version: this.observed!.seen.version, sinceMs: decision.lookFromMs };
        return this.waitForChange(decision.ms, true);
      }
      if (decision.claimsRevision !== undefined) this.claimedRevision = decision.claimsRevision;
      const expected = decision.expected;
      const startMs = this.clock.monotonicMs();
      const result = await this.store.write(this.lock, expected, this.acquisition(record));
      if (result.ok) {
        this.accept(result.record, startMs);
        if (this.state !== 'running' || this.leadership) return;
        break; // answered too late to lead on
      }
      if (this.state !== 'running') return;
      if (result.current === undefined) break;
      record = result.current;
    }
    if (this.state === 'running' && !this.leadership) this.loop.schedule(this.jittered());
  }

  /**
   * One campaign step on a queue store: enqueue (or keep our place) and lead if at the front. The
   * store wakes us when our entry reaches the front; we look again after the front's lease too,
   * unless we wait behind a visible leader and the store's live feed reports removals.
   */
  private async campaignInQueue(queue: LeaseQueue): Promise<void> {
    this.notified = NOTHING;
    const startMs = this.clock.monotonicMs();
    // 3. Enqueue; the store tells whether our entry is at the front. A front entry may be claimed
    // with no round trip if its lease's last checked refresh leaves a renewal's worth of time.
    const claimWithinMs = this.timing.renewDeadlineMs - this.timing.retryPeriodMs;
    const write = this.acquisition(this.observed?.record ?? null);
    const options = { claimWithinMs, renewDeadlineMs: this.timing.renewDeadlineMs };
    let result = await queue.campaign(this.lock, write, options);
    // 6. The front asks a handover and our entry is right behind it (core/handover.ts): accept
    // one asked of us; for one asked of a candidate queued behind us, step back to the end of
    // the line; for one not (yet) queued, look again after a retry period.
    let soon = false;
    const front = !result.ok && result.waiting?.[0] === this.identity ? result.current : undefined;
    const to = handoverAskedOf(front);
    if (front && to !== undefined && this.state === 'running') {
      if (to === this.identity) await this.acceptInQueue(front);
      else if (result.waiting!.includes(to) && queue.requeue) result = await queue.requeue(this.lock, write, options);
      else soon = true;
    }
    if (result.ok && result.leaseAgeMs !== undefined) {
      // 4. Claimed on a refresh the store names: the deadline counts from that refresh's send —
      // one the store already knew of (before this call), or one it made after waiting for its
      // predecessor (etcd's RevocationGuard). Renew at once, which also lets the store write the
      // record it kept from when the entry queued.
      this.accept(result.record, this.clock.monotonicMs() - result.leaseAgeMs);
      if (this.leadership) this.loop.again();
      return;
    }
    if (result.ok) return this.accept(result.record, startMs);
    if (this.state !== 'running') return;
    if (result.current !== undefined) this.observe(result.current);
    if (soon) return this.loop.schedule(this.jittered());
    this.waitForChange((result.current?.leaseDurationMs ?? this.timing.leaseDurationMs) + this.timing.retryPeriodMs, !!result.current);
  }

  /** acceptInQueue writes our acceptance into `front`, which asks a handover to us (unless accepted already). */
  private async acceptInQueue(front: LeaseRecord): Promise<void> {
    let record: LeaseRecord | null | undefined = front;
    for (let attempt = 0; attempt < 3 && record && handoverAskedOf(record) === this.identity && handoverAcceptedBy(record) === undefined; attempt++) {
      const accepted: WriteResult = await this.store.write(this.lock, record.revision, acceptWrite(record, this.instance));
      record = accepted.ok ? undefined : accepted.current;
    }
  }

  /**
   * isOrphanOfOurs: a record this very elector wrote that backs no current leadership (a lost
   * or late reply, a lease it stepped down from). Nothing acts under it any more, so it is
   * taken over at once (compare-and-set, new term) instead of being waited out.
   */
  private isOrphanOfOurs(record: LeaseRecord): boolean {
    return record.holder === this.identity && record.metadata.instance === this.instance && !this.leadership;
  }

  private acquisition(prior: LeaseRecord | null): LeaseWrite {
    return acquisitionWrite(this.identity, this.timing.leaseDurationMs, this.clock.wallMs(), prior, this.metadata);
  }

  /** electedEvent is the `elected` payload of leadership `l`. */
  private electedEvent(l: Leadership): ElectedEvent {
    return { term: l.term, signal: l.controller.signal, deadlineMs: l.deadlineMs, heartbeat: () => this.heartbeat(l) };
  }

  /** heartbeat re-arms the progress timer of `l`, if it still leads and a timeout is set. */
  private heartbeat(l: Leadership): void {
    if (this.progressTimeoutMs === undefined || this.leadership !== l) return;
    const sinceMs = this.progress?.l === l ? this.progress.sinceMs : this.clock.monotonicMs();
    if (this.progress) this.clock.clearTimer(this.progress.timer);
    this.progress = { l, sinceMs, timer: this.clock.setTimer(() => this.progressMissed(l), this.progressTimeoutMs) };
  }

  /**
   * progressMissed steps down a leader whose work reported no progress within
   * progressTimeoutMs: signal aborted, `stopped` ('hung'), released, then a growing back-off.
   */
  private progressMissed(l: Leadership): void {
    if (this.leadership !== l || this.state !== 'running') return;
    const ledMs = this.clock.monotonicMs() - (this.progress?.sinceMs ?? this.clock.monotonicMs());
    const backoffMs = this.hangStreak!.hung(ledMs);
    const note = `no progress within ${this.progressTimeoutMs}ms`;
    this.holdOff(backoffMs);
    this.stepDown('hung', note);
    this.handOff(l.record)
      .catch((err) => this.reportError(err))
      .then(() => this.recordHung(l, note, backoffMs));
  }

  /** recordHung keeps why `l` ended in the store's ledger (after the release: the handover comes first). */
  private recordHung(l: Leadership, note: string | undefined, backoffMs: number | undefined): Promise<void> {
    return recordStepDown(this.store, this.lock, {
      holder: this.identity,
      term: l.term,
      reason: 'hung',
      ...(note !== undefined ? { note } : {}),
      at: new Date(this.clock.wallMs()).toISOString(),
      ...(backoffMs !== undefined ? { backoffMs: Math.round(backoffMs) } : {}),
    }).catch((err) => this.reportError(err));
  }

  /** accept leads on a won acquisition or campaign whose write was sent at `startMs` — if it still may. */
  private accept(record: LeaseRecord, startMs: number): void {
    if (this.state !== 'running') {
      // stop() raced with our acquisition: hand the lease straight back.
      this.pendingRelease = record;
      return;
    }
    if (this.clock.monotonicMs() >= startMs + this.timing.renewDeadlineMs) {
      // 4. The answer came back after the deadline this write would have given us: others may
      // already count the lease as expired. Never lead on it; free it if it is still ours.
      this.pendingRelease = record;
      return this.loop.again();
    }
    // 4. The deadline timer is armed before anyone hears of the leadership.
    const l = new Leadership(record, startMs, this.timing.renewDeadlineMs, this.clock, (x) => this.deadlinePassed(x));
    this.leadership = l;
    this.stepDownAsked = undefined;
    this.observe(record);
    // A listener asking isLeader() past the deadline ends this leadership at once; its `stopped`
    // then waits until every `elected` listener has run (see stepDown).
    this.announcing = true;
    try {
      // The progress timer runs from the election: the first heartbeat is due within the timeout.
      this.heartbeat(l);
      this.emit('elected', this.electedEvent(l));
    } finally {
      this.announcing = false;
    }
    if (this.deferredStop) this.emit('stopped', this.deferredStop);
    this.deferredStop = undefined;
    this.loop.scheduleAt(renewalDueMs(startMs, this.timing.retryPeriodMs));
  }

  /** deadlinePassed ends a leadership at its deadline (rule 4), and any renewal still waiting on the store. */
  private deadlinePassed(l: Leadership): void {
    if (this.leadership !== l) return;
    l.renewal?.reject(new StoreUnavailableError(`elector: store did not answer within the renew deadline (${this.timing.renewDeadlineMs}ms)`));
    this.stepDown('renew-deadline');
    // Best effort: if our record is still there, free it so a standby need not wait it out.
    this.pendingRelease = l.record;
    this.loop.kick();
  }

  /**
   * One renewal: compare-and-set our own record with a fresh renewedAt. It goes out in the
   * store's next batch; renewalAnswered() takes the answer, and the loop's step ends there.
   */
  private renew(l: Leadership): StepOutcome {
    if (this.stepDownAsked || l.record.stepDownRequested) return this.stepDownAndRelease(l, 'step-down-requested');
    if (handoverAcceptedBy(l.record) !== undefined) return this.give(l);
    sendRenewal(this.store, this.lock, l, this.clock, this.renewalAnswer);
    return STEP_PENDING;
  }

  /** renewalAnswered acts on the answer to renewal `p` (`result`, or the error `err` that ended it). */
  private renewalAnswered(p: PendingRenewal, result: WriteResult | undefined, err: unknown): Promise<void> | void {
    const l = this.leadership;
    if (!l || l.renewal !== p) {
      // We stepped down while the write was in flight; if it landed, our record must be freed.
      if (result?.ok) this.pendingRelease = result.record;
      if (result && this.pendingRelease) this.loop.kick();
      return;
    }
    l.renewal = undefined;
    if (!result) {
      this.reportError(err);
      return this.loop.schedule(this.timing.retryPeriodMs);
    }
    if (result.ok) {
      // 4. The deadline moves to renewDeadline after this write's start (the timer reads it).
      l.record = result.record;
      l.renewStartMs = p.startMs;
      if (this.listenerCount('renewed') > 0) this.emit('renewed', { term: l.term, durationMs: this.clock.monotonicMs() - p.startMs });
      if (result.record.stepDownRequested) return this.stepDownAndRelease(l, 'step-down-requested');
      return this.loop.scheduleAt(renewalDueMs(p.startMs, this.timing.retryPeriodMs));
    }
    // Changed under us yet still ours (a step-down flag)? Adopt it. Refused at our own revision: lost (e.g. a broken blob lease).
    if (result.current !== undefined) return this.renewalRefused(l, result.current, p.expected);
    return this.store.read(this.lock).then((current) => this.renewalRefused(l, current, p.expected));
  }

  /** renewalRefused: a renewal compared on revision `refusedAt` was refused; `current` is the record now. */
  private renewalRefused(l: Leadership, current: LeaseRecord | null, refusedAt: string): Promise<void> | void {
    if (this.leadership !== l) return;
    if (current && current.holder === this.identity && current.term === l.term && current.revision !== refusedAt) {
      l.record = current;
      if (current.stepDownRequested) return this.stepDownAndRelease(l, 'step-down-requested');
      if (handoverAcceptedBy(current) !== undefined) return this.give(l);
      return this.loop.again();
    }
    this.stepDown('lost');
    this.observe(current);
    this.loop.schedule(0);
  }

  /**
   * give (rule 6): the successor accepted the handover asked in our record: stop the work as on
   * a step-down, then write the record to it with a new term (or release, if it changed meanwhile).
   */
  private give(l: Leadership): Promise<void> {
    const to = { identity: handoverAskedOf(l.record)!, instance: handoverAcceptedBy(l.record)! };
    this.holdOff();
    this.stepDown('handover', `to ${to.identity}`);
    return this.giveTo(l.record, to);
  }

  /**
   * handOff gives up `record` (a leadership that just ended on purpose: stop(), resign(), a
   * step-down asked for, no progress). With a registry (rule 6) it goes to the best live
   * candidate — asked, accepted within half a lease (a renew deadline at most), given once the work has stopped;
   * otherwise, or if nobody accepts in time, it is released to the standbys' race as before.
   */
  private async handOff(record: LeaseRecord): Promise<void> {
    // The lease is not renewed meanwhile, and stays ours for others for a whole lease after our
    // last write: waiting up to half of it for an acceptance delays nobody who could lead sooner.
    const boundMs = Math.min(this.timing.leaseDurationMs / 2, this.timing.renewDeadlineMs);
    // A handover already asked on our record (the preference rule's, still in flight) goes on to
    // the candidate it named: asking another would take that question back and start over.
    const seen = this.leader()?.record;
    const ours = seen && seen.holder === this.identity && seen.term === record.term ? seen : undefined;
    const inFlight = this.side ? (handoverAskedOf(record) ?? handoverAskedOf(ours)) : undefined;
    const successor = inFlight ?? (this.side ? await withDeadline(this.side.successor(), boundMs, this.clock).catch(() => undefined) : undefined);
    if (!successor) return this.release(record);
    // The acceptance is heard from the lock's watch (onNotify wakes handOffListeners), else polled.
    const onChange = (f: () => void) => {
      this.stopListeners.add(f);
      return () => void this.stopListeners.delete(f);
    };
    const asked = await askAndAwaitAcceptance(this.store, this.lock, record, successor, boundMs, this.clock, 25, onChange).catch((err) => void this.reportError(err));
    if (asked) return this.giveTo(asked.record, { identity: successor, instance: asked.instance });
    const current = await this.store.read(this.lock);
    if (current && current.holder === this.identity && current.term === record.term) await this.release(current);
  }

  /** giveTo writes `record` (ours, our work stopped) to the successor that accepted; releases if it withdrew. */
  private async giveTo(record: LeaseRecord, to: { identity: string; instance: string }): Promise<void> {
    if (this.beforeRelease) await this.beforeRelease(record.term).catch((err) => this.reportError(err));
    const given = await giveLease(this.store, this.lock, record, to, this.timing.leaseDurationMs, this.clock);
    if (given.outcome === 'given') return this.observe(given.record);
    if (given.outcome === 'withdrawn') return this.releaseNow(given.record!);
    // 'failed': still ours and promised; the next campaign step gives it (campaignForRecord).
    if (given.outcome === 'failed') this.reportError(given.error ?? new StoreUnavailableError(`elector: could not hand "${this.lock}" to ${to.identity}`));
  }

  private stepDownAndRelease(l: Leadership, reason: StopReason): Promise<void> {
    this.holdOff();
    this.stepDown(reason, noteOf(l.record) ?? this.stepDownAsked?.note);
    return this.handOff(l.record);
  }

  /**
   * holdOff keeps a candidate that gave the lease up on purpose from campaigning for one
   * jittered retry period, so a waiting standby wins the handover. Without it, the release's
   * own notification would wake this elector first.
   */
  private holdOff(holdOffMs?: number): void {
    const ms = holdOffMs ?? this.jittered();
    this.holdOffUntilMs = this.clock.monotonicMs() + ms;
    this.loop.schedule(ms);
  }

  /** stepDown ends leadership at once: abort the signal, then emit `stopped`. Never awaits. */
  private stepDown(reason: StopReason, note?: string): void {
    const l = this.leadership;
    if (!l) return;
    this.leadership = undefined;
    this.stepDownAsked = undefined;
    if (this.progress) this.clock.clearTimer(this.progress.timer);
    this.progress = undefined;
    if (reason !== 'hung') this.hangStreak?.healthy();
    l.end(`elector: leadership of "${this.lock}" ended (${reason})`);
    const ev: StoppedEvent = note !== undefined && (reason === 'step-down-requested' || reason === 'hung' || reason === 'handover') ? { term: l.term, reason, note } : { term: l.term, reason };
    if (this.announcing) this.deferredStop = ev;
    else this.emit('stopped', ev);
  }

  /** release frees our record (compare-and-set to no holder), retrying once if only its flag changed. */
  private async release(record: LeaseRecord): Promise<void> {
    // The work of the term stops before the lease can go to anyone else (beforeRelease).
    if (this.beforeRelease) await this.beforeRelease(record.term).catch((err) => this.reportError(err));
    return this.releaseNow(record);
  }

  /** releaseNow is release() once the work has stopped. */
  private async releaseNow(record: LeaseRecord): Promise<void> {
    let expected = record;
    for (let attempt = 0; attempt < 3; attempt++) {
      const result = await this.store.write(this.lock, expected.revision, releaseWrite(expected, this.clock.wallMs()));
      if (result.ok) {
        this.observe(result.record);
        return;
      }
      const current = result.current !== undefined ? result.current : await this.store.read(this.lock);
      if (!current || current.holder !== this.identity || current.term !== record.term) return;
      expected = current;
    }
  }

  /** observe notes `record`, timing a new revision from now on our own clock (rule 2), and tells of a new leader. */
  private observe(record: LeaseRecord | null): void {
    const seen = sight(this.observed?.seen, record?.revision ?? '', this.clock.monotonicMs());
    if (seen !== this.observed?.seen) this.observed = { record, seen };
    const key = record ? `${record.holder}\u0000${record.term}` : '';
    if (key === this.lastLeaderKey) return;
    this.lastLeaderKey = key;
    const isSelf = !!record && !!this.leadership && record.term === this.leadership.term;
    this.emit('leader', { holder: record?.holder ?? null, term: record?.term ?? 0, isSelf, record });
  }

  /** hearsRenewals: the live feed reports every renewal of a server-expired record (LeaseStore.watchSeesRenewals). */
  private hearsRenewals(): boolean {
    return this.feedLive() && this.store.watchSeesRenewals === true;
  }

  /** feedLive: we watch the lock and the store's change feed is up (rule 5). */
  private feedLive(): boolean {
    return !!this.unwatch && this.store.watchLive !== false;
  }

  /**
   * expiryDue is the record we observed, if a timer we set for its expiry woke us (rule 2 on
   * our own count, or the server's timer on a store whose feed reports renewals): we then write
   * at once instead of reading first (or, woken early, wait the rest). The write is a compare-and-set on the revision we timed (or
   * create-if-absent on a server-expired store), so a record that changed meanwhile only makes
   * it lose, answering with the current record. A feed that was cut (notified undefined) or
   * anything else reads as before.
   */
  private expiryDue(): LeaseRecord | undefined {
    const o = this.observed;
    // A store without a live feed must read: its polls are how renewals are seen at all.
    if (this.notified !== NOTHING || !this.feedLive() || !o?.record || o.record.revision !== this.timedExpiry) return undefined;
    // Once per timed expiry (a write that loses without naming the winner is followed by a
    // read); a timer that fired a little early (Node counts whole milliseconds) waits the rest.
    this.timedExpiry = undefined;
    if (!this.store.capabilities.serverExpiry) return o.record;
    return this.hearsRenewals() && this.claimedRevision !== o.record.revision ? o.record : undefined;
  }

  /** waitForExpiry waits for `record`'s expiry, `ms` from now (see expiryDue), or a change. */
  private waitForExpiry(record: LeaseRecord, ms: number): void {
    this.timedExpiry = record.revision;
    this.waitForChange(ms);
  }

  /** waitForChange sleeps until `ms` from now, or the next notification, or the next poll. */
  private waitForChange(ms: number, untilRemoved = false): void {
    // 5. A feed that is down hears nothing: poll as on a store without watch until it is back. A
    // live one that reports removals needs no timer to hear of one (safe: docs/history/performance.md).
    const notifying = this.feedLive();
    if (notifying && untilRemoved && this.store.watchSeesExpiry) return this.loop.clear();
    this.loop.schedule(notifying ? ms : Math.min(ms, this.jittered()));
  }

  private reportError(err: unknown): void {
    if (this.listenerCount('storeError') > 0) this.emit('storeError', err instanceof Error ? err : new StoreUnavailableError(errorMessage(err)));
  }
}

const NOTHING = Symbol('nothing');
