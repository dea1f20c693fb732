/**
 * ShardGroup: N shards spread fairly over the live members of a group, each shard an ordinary
 * baton lease with its own fencing term.
 *
 * Every retry period a member
 *   1. rewrites its heartbeat and observes the others' (membership.ts);
 *   2. reads the group's assignment record and, if the membership it sees differs from the
 *      record's, writes the next one by compare-and-set (assignment.ts: a leaving member's
 *      shards move, a joining member takes its quota, nothing else moves);
 *   3. campaigns, with one LeaderElector each, for the shards assigned to it; an elector never
 *      takes a lease that has not expired, so a shard still held elsewhere is waited for, and
 *      the store's notification wakes the campaign the moment it is released. It also watches,
 *      without campaigning (gate.ts), the shards it would inherit if their owner died, so when the owner is found dead their leases have already been seen expiring and
 *      are taken at once: a crashed member's shards move within a lease and a retry period;
 *   4. gives up shards assigned to someone else: a standby elector simply stops; a held shard is
 *      resigned (its work's signal aborts, `released` is emitted, then the lease is released) —
 *      at most `maxMovesPerPeriod` per period, so a membership change moves shards gradually.
 * While views of the membership disagree, two members may campaign for one shard; the store's
 * compare-and-set lets one of them hold it, and every elector guarantee holds per shard.
 *
 * Hung work (issue 28): `giveUpHung(shard)` — called once the shard's work has been stopped —
 * releases the shard's lease with reason 'hung' (the ledger keeps why, under the shard's lock),
 * and excludes the shard from this member for a back-off that grows with each hang of that
 * shard in a row (core/hang-backoff.ts's HangStreak). The exclusion is published with the
 * heartbeat, so the assignment gives the shard to another member at once and not back to this
 * one while it lasts (assignment.ts, membership.ts); this member does not acquire it meanwhile.
 */
import { EventEmitter } from 'node:events';
import { realClock, type Clock, type TimerHandle } from '../core/clock.js';
import { LeaderElector, type StopReason } from '../core/elector.js';
import { InvalidConfigError, errorMessage } from '../core/errors.js';
import { defaultIdentity } from '../core/identity.js';
import { TIMING_KEYS, checkOptionKeys, resolveTiming, validateIdentity, validateLockName, type Timing } from '../core/options.js';
import type { HolderMetadata, LeaseStore } from '../core/store.js';
import { heirShards, type ShardAssignment } from './assignment.js';
import { GatedStore } from './gate.js';
import { directedHandoverRefusal } from '../core/handover.js';
import { HangStreak } from '../core/hang-backoff.js';
import { Membership, type MemberView } from './membership.js';

/** ShardGroupOptions configures one member of a shard group. */
export interface ShardGroupOptions extends Partial<Timing> {
  store: LeaseStore;
  /** The group's name; shard `i` is the lock `<group>/shard/<i>`. Same rules as a lock name. */
  group: string;
  /** How many shards the group has (1–10,000); every member must give the same number. */
  shards: number;
  /** This member's identity; give a stable one (a pod or instance name) to get its shards back after a restart. */
  identity?: string;
  /** At most this many held shards are given up per retry period. Default ⌈shards / 16⌉. */
  maxMovesPerPeriod?: number;
  metadata?: HolderMetadata;
  clock?: Clock;
  /**
   * drain is called when a held shard is about to be given up cooperatively (a rebalance, or
   * `stop()`), while its lease is still held and renewed: stop the shard's work and resolve.
   * The lease is released only then, so the next owner never overlaps with this one's work.
   * Without it, the work gets only the `signal`, aborted as the lease is released.
   */
  drain?: (shard: number, term: number) => Promise<void>;
  /**
   * hangBackoffBaseMs is the first exclusion after a shard's work hung (`giveUpHung`): the time
   * the work had to show it was alive, such as the progress timeout. It doubles with each hang
   * of that shard in a row, capped at 10 minutes; at least 1 s. Default 1 s.
   */
  hangBackoffBaseMs?: number;
}

/** ShardGiveUp is what `giveUpHung` did: how long the shard is excluded, and the how-manieth hang in a row this is. */
export interface ShardGiveUp {
  readonly backoffMs: number;
  readonly streak: number;
}

/** ShardAcquiredEvent: this member now owns `shard`; stop its work when `signal` aborts. */
export interface ShardAcquiredEvent {
  readonly shard: number;
  readonly term: number;
  readonly signal: AbortSignal;
}

/** ShardReleasedEvent: this member no longer owns `shard` (always follows `acquired`). */
export interface ShardReleasedEvent {
  readonly shard: number;
  readonly term: number;
  /** 'rebalanced' when the shard was given up because it is assigned elsewhere; 'hung' after giveUpHung. */
  readonly reason: StopReason | 'rebalanced';
  /** With 'hung': why (giveUpHung's note), as the ledger keeps it. */
  readonly note?: string;
}

/** ShardRenewedEvent: this member renewed its lease on `shard`; `durationMs` is the write's round trip. */
export interface ShardRenewedEvent {
  readonly shard: number;
  readonly term: number;
  readonly durationMs: number;
}

export interface ShardGroupEvents {
  acquired: [ShardAcquiredEvent];
  released: [ShardReleasedEvent];
  renewed: [ShardRenewedEvent];
  members: [MemberView];
  storeError: [Error];
}

/** MAX_SHARDS keeps the assignment record within one ledger value (64 KiB). */
const MAX_SHARDS = 10_000;

/** shardLock is the lock name of one shard. */
export function shardLock(group: string, shard: number): string {
  return `${shardLockPrefix(group)}${shard}`;
}

/** shardLockPrefix is what the lock names of a group's shards start with. */
export function shardLockPrefix(group: string): string {
  return `${group}/shard/`;
}

/** ShardGroup: see the file comment. */
export class ShardGroup extends EventEmitter<ShardGroupEvents> {
  readonly group: string;
  readonly shards: number;
  readonly identity: string;
  readonly timing: Readonly<Timing>;
  private readonly store: LeaseStore;
  private readonly gated: GatedStore;
  private readonly shardOf = new Map<string, number>();
  private readonly clock: Clock;
  private readonly maxMoves: number;
  private readonly metadata?: HolderMetadata;
  private readonly drain?: (shard: number, term: number) => Promise<void>;
  private readonly membership: Membership;
  private readonly electors = new Map<number, LeaderElector>();
  /** Shards being given up (resign in flight), so they are not counted twice. */
  private readonly leaving = new Set<number>();
  private readonly owned = new Map<number, number>();
  private desired = new Set<number>();
  private view: MemberView = { live: [], all: [], exclusions: new Map() };
  /** Shards this member excludes after their work hung: until when (monotonic ms). */
  private readonly excluded = new Map<number, number>();
  /** Per shard, its hangs in a row on this member. */
  private readonly hangStreaks = new Map<number, HangStreak>();
  /** When this member acquired each shard it holds (monotonic ms): how long a hung term had led. */
  private readonly acquiredAtMs = new Map<number, number>();
  private readonly hangBackoffBaseMs: number;
  /** Set while a cycle runs; `kickPending` asks for another right after it. */
  private inCycle = false;
  private kickPending = false;
  private timer?: TimerHandle;
  private running = false;
  private cycle?: Promise<void>;
  private assignment: ShardAssignment = { members: [], owners: [] };
  private heirs: number[] = [];
  /** The assignment `heirs` was computed for (as text), so it is recomputed only on a change. */
  private heirsOf?: string;
  /** Set while this member's heartbeat fails: the store is down for it. */
  private storeDown = false;

  constructor(options: ShardGroupOptions) {
    super();
    if (!options || typeof options.store?.read !== 'function') throw new TypeError('ShardGroup: options.store must be a LeaseStore (see openStore)');
    checkOptionKeys('ShardGroup', options, ['store', 'group', 'shards', 'identity', 'maxMovesPerPeriod', 'metadata', 'clock', 'drain', 'hangBackoffBaseMs', ...TIMING_KEYS]);
    if (!options.store.ledger) throw new InvalidConfigError(`shards: the ${options.store.kind} store keeps no ledger, which group membership needs`);
    this.group = validateLockName(options.group, 'group');
    validateLockName(shardLock(this.group, MAX_SHARDS), 'group');
    if (!Number.isInteger(options.shards) || options.shards < 1 || options.shards > MAX_SHARDS) {
      throw new InvalidConfigError(`shards: must be a whole number from 1 to ${MAX_SHARDS}, got ${String(options.shards)}`);
    }
    this.shards = options.shards;
    this.identity = validateIdentity(options.identity ?? defaultIdentity());
    const { store: _s, group: _g, shards: _n, identity: _i, maxMovesPerPeriod, metadata, clock, drain, hangBackoffBaseMs, ...timing } = options;
    this.drain = drain;
    if (hangBackoffBaseMs !== undefined && (!Number.isFinite(hangBackoffBaseMs) || hangBackoffBaseMs < 0)) {
      throw new InvalidConfigError(`hangBackoffBaseMs: must be a duration in ms ≥ 0, got ${String(hangBackoffBaseMs)}`);
    }
    this.hangBackoffBaseMs = hangBackoffBaseMs ?? 0;
    this.timing = Object.freeze(resolveTiming(timing));
    const moves = maxMovesPerPeriod ?? Math.ceil(this.shards / 16);
    if (!Number.isInteger(moves) || moves < 1) throw new InvalidConfigError(`maxMovesPerPeriod: must be a whole number ≥ 1, got ${String(maxMovesPerPeriod)}`);
    this.maxMoves = moves;
    this.store = options.store;
    this.metadata = metadata;
    this.clock = clock ?? realClock;
    this.gated = new GatedStore(this.store, (lock) => {
      const shard = this.shardOf.get(lock) ?? -1;
      return this.desired.has(shard) && !this.isExcluded(shard);
    });
    // Joiners settle for a retry period before they are added (membership.ts).
    this.membership = new Membership(this.store.ledger!, this.group, this.shards, this.identity, this.timing.leaseDurationMs, this.clock, this.timing.retryPeriodMs, () =>
      this.excludedShards(),
    );
  }

  /** start joins the group. Resolves at once; listen for `acquired` and `released`. */
  start(): this {
    if (this.running) return this;
    this.running = true;
    this.tick();
    return this;
  }

  /** stop leaves the group: every owned shard's work is stopped and its lease released, then the membership entry says `left`. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    if (this.timer) this.clock.clearTimer(this.timer);
    await this.cycle?.catch(() => {});
    await Promise.all([...this.electors].map(([shard, e]) => this.drained(shard, e).then(() => e.stop())));
    this.electors.clear();
    await this.membership.heartbeat(true).catch((err) => this.report(err));
  }

  /** ownedShards lists the shards this member leads now (by each elector's own deadline). */
  ownedShards(): number[] {
    return [...this.electors.entries()].filter(([, e]) => e.isLeader()).map(([s]) => s).sort((a, b) => a - b);
  }

  /**
   * shardWindow is the leadership window of an owned shard on the monotonic clock (as
   * LeaderElector.leadershipWindow: when its last successful write started, and the deadline by
   * which this member stops it); undefined if this member does not hold it.
   */
  shardWindow(shard: number): ReturnType<LeaderElector['leadershipWindow']> {
    const e = this.electors.get(shard);
    return e?.isLeader() ? e.leadershipWindow() : undefined;
  }

  /** electorOf is the elector of `shard` on this member (while it campaigns for, watches or holds it). */
  electorOf(shard: number): LeaderElector | undefined {
    return this.electors.get(shard);
  }

  /**
   * giveUpHung gives up `shard` because its work hung — call it once that work has stopped. If
   * this member holds the shard, its lease is released with reason 'hung' and `note` (kept in the
   * store's ledger under the shard's lock; `released` says 'hung'). Either way the shard is
   * excluded from this member for a back-off (see the file comment), and the membership is
   * published at once so the assignment moves the shard now. Resolves once the lease is released.
   */
  async giveUpHung(shard: number, note?: string): Promise<ShardGiveUp> {
    if (!Number.isInteger(shard) || shard < 0 || shard >= this.shards) throw new InvalidConfigError(`shards: no shard ${String(shard)} in a group of ${this.shards}`);
    const now = this.clock.monotonicMs();
    let streak = this.hangStreaks.get(shard);
    if (!streak) this.hangStreaks.set(shard, (streak = new HangStreak(this.hangBackoffBaseMs)));
    const backoffMs = streak.hung(now - (this.acquiredAtMs.get(shard) ?? now));
    this.excluded.set(shard, now + backoffMs);
    const elector = this.electors.get(shard);
    const released = elector?.isLeader() ? elector.resign({ reason: 'hung', note, holdOffMs: backoffMs }) : Promise.resolve();
    this.kick();
    await released;
    return { backoffMs, streak: streak.count };
  }

  /** excludedShards lists the shards this member excludes now, with the time left (ms). */
  excludedShards(): Map<number, number> {
    const now = this.clock.monotonicMs();
    const out = new Map<number, number>();
    for (const [s, until] of [...this.excluded].sort((a, b) => a[0] - b[0])) if (until > now) out.set(s, until - now);
    return out;
  }

  private isExcluded(shard: number): boolean {
    const until = this.excluded.get(shard);
    return until !== undefined && until > this.clock.monotonicMs();
  }

  /** members is the last observed membership. */
  members(): MemberView {
    return this.view;
  }

  /** assignment is the group's assignment as last read (members, and each shard's owner index). */
  currentAssignment(): ShardAssignment {
    return this.assignment;
  }

  /** assignedShards lists the shards the last computed assignment gives this member. */
  assignedShards(): number[] {
    return [...this.desired].sort((a, b) => a - b);
  }

  private tick(): void {
    if (!this.running) return;
    this.inCycle = true;
    this.cycle = this.reconcile()
      .catch((err) => this.report(err))
      .finally(() => {
        this.inCycle = false;
        if (!this.running) return;
        if (this.kickPending) {
          this.kickPending = false;
          return this.tick();
        }
        this.timer = this.clock.setTimer(() => this.tick(), this.timing.retryPeriodMs);
      });
  }

  /** kick runs a cycle now (or right after the one running), not at the next retry period. */
  private kick(): void {
    if (!this.running) return;
    if (this.inCycle) {
      this.kickPending = true;
      return;
    }
    if (this.timer) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    this.tick();
  }

  private async reconcile(): Promise<void> {
    // 0. Exclusions that have ended: forget them, and wake the campaign of a shard still ours.
    const now = this.clock.monotonicMs();
    for (const [s, until] of [...this.excluded]) {
      if (until > now) continue;
      this.excluded.delete(s);
      if (this.desired.has(s)) this.gated.open(shardLock(this.group, s));
    }
    // 1. The assignment record first: a member started with another shard count is refused
    //    before its heartbeat could make it a member.
    const current = await this.membership.readAssignment();
    // 2. Heartbeat, the membership as this member sees it, and the record moved on if it is out of date.
    try {
      await this.membership.heartbeat();
    } catch (err) {
      this.storeDown = true;
      throw err;
    }
    const storeBack = this.storeDown;
    this.storeDown = false;
    const view = await this.membership.observe();
    const assignment = await this.membership.advance(current, view);
    if (!this.running) return;
    if (view.live.join('\n') !== this.view.live.join('\n')) this.emit('members', view);
    this.view = view;
    this.assignment = assignment;
    const me = assignment.members.indexOf(this.identity);
    const before = this.desired;
    this.desired = new Set(me < 0 ? [] : assignment.owners.flatMap((m, s) => (m === me ? [s] : [])));
    const key = `${assignment.members.join('\n')}|${assignment.owners.join(',')}`;
    if (key !== this.heirsOf) this.heirs = heirShards(this.group, this.shards, assignment, this.identity);
    this.heirsOf = key;
    const watched = new Set([...this.desired, ...this.heirs]);
    // 3. Campaign for what is ours; watch what we would inherit; wake campaigns that may now acquire.
    for (const s of watched) if (!this.electors.has(s)) this.campaign(s);
    for (const s of this.desired) if (!before.has(s)) this.gated.open(shardLock(this.group, s));
    // The store takes writes again after failing them: every elector looks now, instead of at
    // its next retry (up to retryPeriod × (1 + jitterFactor) away), so leases that ran out
    // during the outage are taken again at once.
    if (storeBack) this.gated.wakeAll();
    // 4. Give up what is not: watchers we no longer need at once, held shards a few per period.
    let moves = 0;
    for (const [s, elector] of [...this.electors]) {
      if (this.desired.has(s) || this.leaving.has(s)) continue;
      if (!elector.isLeader()) {
        if (watched.has(s)) continue;
        this.electors.delete(s);
        void elector.stop().catch((err) => this.report(err));
      } else if (moves < this.maxMoves) {
        moves++;
        this.handOff(s, elector);
      }
    }
  }

  private campaign(shard: number): void {
    const lock = shardLock(this.group, shard);
    this.shardOf.set(lock, shard);
    const elector = new LeaderElector({
      store: this.gated,
      lock,
      identity: this.identity,
      metadata: { ...this.metadata, group: this.group, shard },
      clock: this.clock,
      ...this.timing,
    });
    elector.on('elected', ({ term, signal }) => {
      this.owned.set(shard, term);
      this.acquiredAtMs.set(shard, this.clock.monotonicMs());
      this.emit('acquired', { shard, term, signal });
    });
    elector.on('stopped', ({ term, reason, note }) => {
      const now = this.clock.monotonicMs();
      const ledMs = now - (this.acquiredAtMs.get(shard) ?? now);
      this.owned.delete(shard);
      this.acquiredAtMs.delete(shard);
      // A term of this shard that ended otherwise than hung starts its streak over — once its
      // work had as long as it is given to show it is alive (the back-off's base). A term cut
      // shorter, as the assignment's exchanges cut them while a shard hangs everywhere, proves
      // nothing, and starting over on it would shorten the next back-off of a shard still hung.
      if (reason !== 'hung' && ledMs >= this.hangBackoffBaseMs) this.hangStreaks.delete(shard);
      const why = this.leaving.has(shard) ? 'rebalanced' : reason;
      this.emit('released', why === 'hung' && note !== undefined ? { shard, term, reason: why, note } : { shard, term, reason: why });
    });
    elector.on('renewed', ({ term, durationMs }) => this.emit('renewed', { shard, term, durationMs }));
    elector.on('storeError', (err) => this.report(err));
    this.electors.set(shard, elector);
    elector.start();
  }

  /**
   * handOff gives a held shard to the member the assignment names: the work drained first, then
   * a directed handover (core/handover.ts) to that member's elector for the shard, which is
   * campaigning for it — so it alone takes it, with no race and no expiry. If that member does
   * not accept within two retry periods, the lease is released as before (its owner, woken by
   * the release, takes it).
   */
  private handOff(shard: number, elector: LeaderElector): void {
    this.leaving.add(shard);
    const owner = this.assignment.members[this.assignment.owners[shard] ?? -1];
    const canDirect = owner !== undefined && owner !== this.identity && directedHandoverRefusal(this.store) === undefined;
    void this.drained(shard, elector)
      .then(() => (canDirect && elector.isLeader() ? elector.handover(owner, { checkRegistry: false, ackTimeoutMs: 2 * this.timing.retryPeriodMs, timeoutMs: this.timing.leaseDurationMs * 2 }).catch(() => undefined) : undefined))
      .then(() => elector.stop())
      .catch((err) => this.report(err))
      .finally(() => {
        this.leaving.delete(shard);
        if (this.electors.get(shard) === elector) this.electors.delete(shard);
      });
  }

  /** drained resolves once the user's drain for a shard this member leads has finished (at once otherwise). */
  private async drained(shard: number, elector: LeaderElector): Promise<void> {
    const term = elector.isLeader() ? elector.term : undefined;
    if (!this.drain || term === undefined) return;
    try {
      await this.drain(shard, term);
    } catch (err) {
      this.report(err);
    }
  }

  private report(err: unknown): void {
    const e = err instanceof Error ? err : new Error(errorMessage(err));
    if (this.listenerCount('storeError') > 0) this.emit('storeError', e);
  }
}
