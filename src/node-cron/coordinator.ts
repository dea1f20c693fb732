/**
 * A RunCoordinator for node-cron 4's `distributed` tasks, over baton's cron ledger.
 *
 * node-cron calls `shouldRun(key, ttlMs)` on every instance at each fire, with
 * `key = "<task name>:<slot as ISO time>"`, runs the task where it answered true, then calls
 * `onComplete(key)`; a coordinator that throws skips the fire (fail-closed). This one:
 *
 * 1. campaigns, per task name, for the lock `<lockPrefix><name>` (one LeaderElector per name,
 *    started at the task's first fire);
 * 2. on the leader: fences the lock's cron ledger entry with its term (once per term) and claims
 *    the slot in it — one compare-and-set that also refuses a slot at or before the newest ever
 *    claimed, and a term older than the newest that wrote (cron-ledger.ts) — and answers true
 *    only if the claim landed while it still leads;
 * 3. on a standby: answers false once the ledger shows the slot claimed; while it is not, what
 *    it does is the `missed` policy:
 *    - `catch-up` (default): it waits, up to node-cron's `ttlMs` (the task's `distributedLease`,
 *      30 s by default), for the slot to be claimed — by the leader, or by itself if it is
 *      elected meanwhile because the leader died. A fire due while the leader was dead thus
 *      runs late on the new leader, once. A fire still unclaimed at `ttlMs` runs nowhere.
 *    - `skip`: once a leader is known, a standby answers false at once; a fire due between a
 *      leader's crash and the takeover runs nowhere.
 * 4. `onComplete` records the slot `done`, or `cut` when the term ended before the task did.
 *
 * Never twice: a slot is claimed by exactly one compare-and-set on the one ledger entry, so at
 * most one instance ever answers true for it. A leader killed after its claim leaves the slot
 * `running`; the next term's fence marks it `cut`, and it is not run again (at most once).
 */
import { randomUUID } from 'node:crypto';
import { LeaderElector, type ElectedEvent } from '../core/elector.js';
import { realClock, type Clock } from '../core/clock.js';
import { InvalidConfigError } from '../core/errors.js';
import { TIMING_KEYS, checkOptionKeys, validateLockName, type Timing } from '../core/options.js';
import type { HolderMetadata, Ledger, LeaseStore } from '../core/store.js';
import { openStore } from '../stores/registry.js';
import { claimSlot, fenceCron, markSlot, readCronHead, type CronWriter } from '../jobs/cron-ledger.js';
import { requireLedger } from '../jobs/ledger-keys.js';

/** RunCoordinator is node-cron 4's interface (`import type { RunCoordinator } from 'node-cron'`), restated so no node-cron types are needed to use it. */
export interface RunCoordinator {
  shouldRun(key: string, ttlMs: number): boolean | Promise<boolean>;
  onComplete?(key: string): void | Promise<void>;
}

/** MissedFirePolicy: what a fire due while no live leader claims it becomes (see the module comment). */
export type MissedFirePolicy = 'catch-up' | 'skip';

/** NodeCronCoordinatorOptions configures runCoordinator. Timing fields are the elector's (see LeaderElectorOptions). */
export interface NodeCronCoordinatorOptions extends Partial<Timing> {
  /** A store, or its URL. Default: `BATON_STORE`, else the embedded SQLite file (as `openStore()`). */
  store?: LeaseStore | string;
  /** Put in front of a task's name to make its lock name. Default `node-cron/`. */
  lockPrefix?: string;
  /** `catch-up` (default) or `skip`. */
  missed?: MissedFirePolicy;
  /** Candidate identity (default `<hostname>-<pid>-<random>`). */
  identity?: string;
  /** Extra holder metadata for the leases. */
  metadata?: HolderMetadata;
  /** How often a waiting standby reads the ledger. Default 100 ms. */
  pollMs?: number;
  /** Time source (tests). Default real time. */
  clock?: Clock;
}

const OPTION_KEYS = ['store', 'lockPrefix', 'missed', 'identity', 'metadata', 'pollMs', 'clock', ...TIMING_KEYS] as const;
/** node-cron appends the slot as `Date.prototype.toISOString()`: always 24 characters. */
const ISO_LENGTH = 24;

/** FireClaim is a fire this instance claimed and is running: its term fences the task's writes. */
export interface FireClaim {
  readonly lock: string;
  readonly slot: Date;
  /** The fencing token of the leadership the fire runs under. */
  readonly term: number;
  /** Aborted when that leadership ends. */
  readonly signal: AbortSignal;
}

interface TaskLock {
  readonly lock: string;
  readonly elector: LeaderElector;
  readonly writer: CronWriter;
  elected?: ElectedEvent;
  fencedTerm?: number;
  /** Claims run one at a time per lock, in slot order. */
  chain: Promise<unknown>;
  /** Slots whose shouldRun is still waiting here (catch-up), not yet in `chain`. */
  readonly waiting: Set<number>;
}

/**
 * NodeCronCoordinator is what runCoordinator returns: a node-cron RunCoordinator with
 * `claimOf` for the running fire's term, and `close` to release the leases on shutdown.
 */
export class NodeCronCoordinator implements RunCoordinator {
  private readonly options: NodeCronCoordinatorOptions;
  private readonly clock: Clock;
  private readonly missed: MissedFirePolicy;
  private readonly lockPrefix: string;
  private readonly pollMs: number;
  private storeOpening?: Promise<LeaseStore>;
  private readonly ownsStore: boolean;
  private readonly tasks = new Map<string, TaskLock>();
  private readonly running = new Map<string, FireClaim & { readonly claim: string; readonly ledger: Ledger }>();
  private closed = false;

  constructor(options: NodeCronCoordinatorOptions = {}) {
    checkOptionKeys('runCoordinator', options, OPTION_KEYS);
    this.options = options;
    this.clock = options.clock ?? realClock;
    this.missed = options.missed ?? 'catch-up';
    if (this.missed !== 'catch-up' && this.missed !== 'skip') throw new InvalidConfigError(`runCoordinator: missed must be "catch-up" or "skip", got ${JSON.stringify(this.missed)}`);
    this.lockPrefix = options.lockPrefix ?? 'node-cron/';
    if (typeof this.lockPrefix !== 'string') throw new InvalidConfigError('runCoordinator: lockPrefix must be a string');
    this.pollMs = options.pollMs ?? 100;
    if (!Number.isFinite(this.pollMs) || this.pollMs < 10) throw new InvalidConfigError(`runCoordinator: pollMs must be a number of at least 10, got ${String(options.pollMs)}`);
    this.ownsStore = typeof options.store !== 'object';
    if (typeof options.store === 'object') this.storeOpening = Promise.resolve(options.store);
  }

  /** shouldRun answers node-cron: true on exactly one instance per fire (see the module comment). */
  async shouldRun(key: string, ttlMs: number): Promise<boolean> {
    const { name, slotMs } = parseKey(key);
    const task = await this.task(name);
    const ledger = requireLedger(await this.store(), 'node-cron');
    const until = this.clock.monotonicMs() + Math.max(0, ttlMs);
    task.waiting.add(slotMs);
    try {
      for (;;) {
        if (this.closed) return false;
        const e = task.elected;
        if (e && !e.signal.aborted && task.elector.isLeader()) {
          // The ledger refuses a slot at or before the newest claimed: a fire that came due while
          // the leader was dead, still waiting here, must claim before a later one that arrived
          // with the election, or catch-up would lose it.
          await this.earlierSlotsFirst(task, slotMs, until);
          task.waiting.delete(slotMs);
          return this.claimInOrder(task, ledger, key, slotMs, e);
        }
        const head = await readCronHead(ledger, task.lock);
        if (head && head.lastSlotMs !== null && head.lastSlotMs >= slotMs) return false;
        if (this.missed === 'skip' && task.elector.leader()?.holder) return false;
        const left = until - this.clock.monotonicMs();
        if (left <= 0) return false;
        await this.waitForChange(task, Math.min(this.pollMs, left));
      }
    } finally {
      task.waiting.delete(slotMs);
    }
  }

  /** earlierSlotsFirst waits (until `untilMs` at most) while an earlier slot of `task` is still waiting here. */
  private async earlierSlotsFirst(task: TaskLock, slotMs: number, untilMs: number): Promise<void> {
    while ([...task.waiting].some((s) => s < slotMs) && this.clock.monotonicMs() < untilMs && !this.closed) {
      await new Promise<void>((resolve) => this.clock.setTimer(resolve, 5));
    }
  }

  /** onComplete records how the fire ended: `done`, or `cut` if its term ended first. */
  async onComplete(key: string): Promise<void> {
    const run = this.running.get(key);
    if (!run) return;
    this.running.delete(key);
    const cut = run.signal.aborted;
    await markSlot(run.ledger, run.lock, run.claim, cut ? 'cut' : 'done', this.clock.wallMs(), cut ? `term ${run.term} ended before the task did` : undefined);
  }

  /**
   * claimOf returns the claim of the fire node-cron is running with this context (its `date` and
   * its task's name), so the task can pass the term to what it writes; undefined if this
   * instance did not claim it.
   */
  claimOf(context: { readonly date: Date; readonly task?: { readonly name?: string } }): FireClaim | undefined {
    const name = context.task?.name;
    const run = name === undefined ? undefined : this.running.get(`${name}:${context.date.toISOString()}`);
    return run && { lock: run.lock, slot: run.slot, term: run.term, signal: run.signal };
  }

  /** close stops campaigning and releases every lease this coordinator holds; then closes a store it opened. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.tasks.values()].map((t) => t.elector.stop()));
    if (this.ownsStore && this.storeOpening) await (await this.storeOpening.catch(() => undefined))?.close();
  }

  private store(): Promise<LeaseStore> {
    this.storeOpening ??= openStore(this.options.store as string | undefined);
    return this.storeOpening;
  }

  private async task(name: string): Promise<TaskLock> {
    const known = this.tasks.get(name);
    if (known) return known;
    const lock = validateLockName(`${this.lockPrefix}${name}`, 'runCoordinator: lock of node-cron task');
    const store = await this.store();
    const again = this.tasks.get(name);
    if (again) return again;
    const { store: _s, lockPrefix: _p, missed: _m, pollMs: _i, ...rest } = this.options;
    const elector = new LeaderElector({ ...rest, store, lock, clock: this.clock });
    const task: TaskLock = { lock, elector, writer: { identity: elector.identity }, chain: Promise.resolve(), waiting: new Set() };
    elector.on('elected', (e) => (task.elected = e));
    this.tasks.set(name, task);
    if (!this.closed) elector.start();
    return task;
  }

  /** claimInOrder claims a slot behind any claim of the same lock already under way. */
  private claimInOrder(task: TaskLock, ledger: Ledger, key: string, slotMs: number, e: ElectedEvent): Promise<boolean> {
    const next = task.chain.then(() => this.claim(task, ledger, key, slotMs, e));
    task.chain = next.catch(() => undefined);
    return next;
  }

  private async claim(task: TaskLock, ledger: Ledger, key: string, slotMs: number, e: ElectedEvent): Promise<boolean> {
    // 1. The term's fence comes first: from then on no older term can claim in this entry.
    if (task.fencedTerm !== e.term) {
      const fenced = await fenceCron(ledger, task.lock, e.term, task.writer, this.clock.wallMs());
      if (fenced.stale) return false;
      task.fencedTerm = e.term;
    }
    if (e.signal.aborted) return false;
    // 2. The claim: one compare-and-set; a slot already claimed or a newer term refuses it.
    const claim = randomUUID();
    const r = await claimSlot(ledger, task.lock, e.term, slotMs, task.writer, { claim, wallMs: this.clock.wallMs() });
    if (!r.ok) return false;
    // 3. Leadership ended while the claim was in flight: the slot is ours but no longer fenced.
    if (e.signal.aborted) {
      await markSlot(ledger, task.lock, claim, 'cut', this.clock.wallMs(), `term ${e.term} ended before the fire started`).catch(() => undefined);
      return false;
    }
    this.running.set(key, { lock: task.lock, slot: new Date(slotMs), term: e.term, signal: e.signal, claim, ledger });
    return true;
  }

  /** waitForChange resolves after `ms`, or sooner when this instance is elected for the task. */
  private waitForChange(task: TaskLock, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.clock.clearTimer(timer);
        task.elector.off('elected', done);
        resolve();
      };
      const timer = this.clock.setTimer(done, ms);
      task.elector.on('elected', done);
    });
  }
}

/** parseKey splits node-cron's `<name>:<ISO slot>` key. */
function parseKey(key: string): { name: string; slotMs: number } {
  const slotText = typeof key === 'string' ? key.slice(-ISO_LENGTH) : '';
  const slotMs = Date.parse(slotText);
  if (typeof key !== 'string' || key.length < ISO_LENGTH + 2 || key[key.length - ISO_LENGTH - 1] !== ':' || Number.isNaN(slotMs)) {
    throw new InvalidConfigError(`runCoordinator: ${JSON.stringify(String(key)).slice(0, 120)} is not a node-cron key ("<task name>:<ISO time>")`);
  }
  return { name: key.slice(0, -ISO_LENGTH - 1), slotMs };
}

/**
 * runCoordinator returns a node-cron 4 RunCoordinator over baton's cron ledger: pass it as a
 * `distributed` task's `runCoordinator` (or to `cron.setRunCoordinator`), with the same store on
 * every instance. Each fire runs on one instance fleet-wide, under a fenced term, and is recorded
 * in the ledger (`baton status --lock node-cron/<name>`). Call `close()` on shutdown to hand the
 * leases over at once. Options are checked here: an unknown key throws InvalidConfigError.
 */
export function runCoordinator(options: NodeCronCoordinatorOptions = {}): NodeCronCoordinator {
  return new NodeCronCoordinator(options);
}

