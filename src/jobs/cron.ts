/**
 * CronJob: a schedule that exactly one instance of a fleet runs — the leader of one lock.
 *
 * Every instance creates the same job; each campaigns for the lock. The leader, for its term:
 *
 * 1. fences the ledger entry with its term (cron-ledger.ts), so no older term claims again;
 * 2. starts from the newest slot ever claimed (from the ledger, not from memory: a restarted
 *    or brand-new instance knows what ran) and applies the missed-slot policy (schedule.ts);
 * 3. sleeps until the next slot, claims it in the ledger with its term — the claim is what
 *    makes a slot run at most once fleet-wide — and only then runs the work;
 * 4. records the outcome (ok / failed / cut) on the slot's record.
 *
 * Work that outlasts leadership has its signal aborted (the CLI's runner kills the command's
 * process group through the watchdog); the slot is recorded `cut` and never retried.
 */
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import { LeaderElector, type ElectedEvent } from '../core/elector.js';
import { realClock, sleep, type Clock } from '../core/clock.js';
import { StoreUnavailableError, errorMessage } from '../core/errors.js';
import { TIMING_KEYS, checkOptionKeys, type Timing } from '../core/options.js';
import type { HolderMetadata, Ledger, LeaseStore } from '../core/store.js';
import { requireLedger } from './ledger-keys.js';
import { claimSlot, fenceCron, finishSlot, statusOf, type CronWriter, type SlotRecord } from './cron-ledger.js';
import { Schedule, planSlots, validateMissedPolicy, type MissedPolicy } from './schedule.js';
import { functionRunner, type JobFunction, type RunContext, type RunOutcome } from './runner.js';

/** CronJobOptions configures a CronJob. Timing fields are the elector's (see LeaderElectorOptions). */
export interface CronJobOptions extends Partial<Timing> {
  /** Cron expression: 5 fields (minutes), 6 (seconds first) or 7 (years last); nicknames like @hourly. */
  schedule: string;
  /** IANA time zone the expression is read in. Default UTC. */
  timezone?: string;
  /** Missed-slot policy: `latest` (default) runs the newest missed slot once if it is younger than one interval; `skip` never catches up. */
  missed?: MissedPolicy;
  /** Candidate identity (default `<hostname>-<pid>-<random>`). Ignored when `elector` is given. */
  identity?: string;
  /** Extra holder metadata for the lease. Ignored when `elector` is given. */
  metadata?: HolderMetadata;
  /** Use this elector (for the same store and lock) instead of creating one. The job starts and stops it. */
  elector?: LeaderElector;
  /** Time source (tests). Default real time. */
  clock?: Clock;
}

/** CRON_OPTION_KEYS: every key CronJobOptions has; any other is refused. */
const CRON_OPTION_KEYS = ['schedule', 'timezone', 'missed', 'identity', 'metadata', 'elector', 'clock', ...TIMING_KEYS] as const;

/** CronRunContext is what the work of one slot is given. */
export interface CronRunContext extends RunContext {
  readonly lock: string;
  /** The scheduled instant of this slot. */
  readonly slot: Date;
  /** True when this is a missed slot being caught up (`latest` policy). */
  readonly late: boolean;
  readonly identity: string;
}

/** CronRunner runs one slot's work; the CLI supplies one that runs a command. */
export type CronRunner = (ctx: CronRunContext) => Promise<RunOutcome>;

/** Events a CronJob emits (all informational; the ledger is the record). */
export interface CronJobEvents {
  /** A slot was claimed and its work is starting. */
  claimed: [SlotRecord];
  /** A slot's work ended; the record carries the final status. */
  finished: [SlotRecord & { outcome: RunOutcome }];
  /** Slots came due and will not run (policy `skip`, or older than the one caught up). */
  skipped: [{ readonly count: number; readonly term: number; readonly throughMs: number }];
  /** The ledger shows a newer term than ours: we are a stale leader and do nothing. */
  stale: [{ readonly term: number; readonly newerTerm: number }];
  /** A store failure (the job retries or waits for the next slot). */
  storeError: [Error];
}

/** The longest single sleep, so a wall-clock step is noticed within this long. */
const MAX_SLEEP_MS = 60_000;
/** How many times a claim or outcome write is retried after a store failure. */
const WRITE_ATTEMPTS = 3;

/**
 * CronJob runs `runner` on `schedule` on the leader of `lock` only; see the module comment.
 * Create it on every instance, call `start()`, and `stop()` on shutdown.
 */
export class CronJob extends EventEmitter<CronJobEvents> {
  readonly lock: string;
  readonly schedule: Schedule;
  readonly missed: MissedPolicy;
  readonly elector: LeaderElector;
  private readonly ledger: Ledger;
  private readonly clock: Clock;
  private readonly writer: CronWriter;
  private readonly halt = new AbortController();
  private readonly abortRuns = new AbortController();
  private chain: Promise<void> = Promise.resolve();
  private started = false;
  private stopping?: Promise<void>;
  private readonly onElected = (e: ElectedEvent) => {
    this.chain = this.chain.then(() => this.lead(e.term, e.signal)).catch((err) => this.report(err));
  };

  constructor(
    store: LeaseStore,
    lock: string,
    options: CronJobOptions,
    private readonly runner: CronRunner,
  ) {
    super();
    checkOptionKeys('cronJob', options, CRON_OPTION_KEYS);
    this.ledger = requireLedger(store, 'cron');
    this.schedule = new Schedule(options.schedule, options.timezone ?? 'UTC');
    this.missed = validateMissedPolicy(options.missed ?? 'latest');
    this.clock = options.clock ?? realClock;
    const { schedule: _s, timezone: _t, missed: _m, elector, ...rest } = options;
    this.elector = elector ?? new LeaderElector({ ...rest, store, lock, clock: this.clock });
    if (this.elector.lock !== lock) throw new TypeError(`cron: the elector is for lock "${this.elector.lock}", not "${lock}"`);
    this.lock = this.elector.lock;
    this.writer = { identity: this.elector.identity, schedule: this.schedule.expression, timezone: this.schedule.timezone, missed: this.missed };
  }

  /** start begins campaigning; the leader runs the schedule. */
  start(): this {
    if (this.started) return this;
    this.started = true;
    this.elector.on('elected', this.onElected);
    this.elector.start();
    return this;
  }

  /**
   * stop ends the job: no new slots start; a run in progress has its signal aborted (unless
   * `abortRun` is false — then it is left to end by itself, e.g. after the CLI forwarded a
   * signal), its outcome is recorded, and the lease is released.
   */
  stop(options: { abortRun?: boolean } = {}): Promise<void> {
    this.stopping ??= (async () => {
      this.elector.off('elected', this.onElected);
      this.halt.abort(new Error('cron: job stopped'));
      if (options.abortRun !== false) this.abortRuns.abort(new Error('cron: job stopped'));
      await this.chain;
      await this.elector.stop();
    })();
    return this.stopping;
  }

  /** One term of leadership: fence, then plan / sleep / claim / run until it ends. */
  private async lead(term: number, leadership: AbortSignal): Promise<void> {
    const active = AbortSignal.any([leadership, this.halt.signal]);
    // Without the fence nothing may be claimed: keep trying for as long as we lead.
    const fenced = await this.retrying(() => fenceCron(this.ledger, this.lock, term, this.writer, this.clock.wallMs()), active, Infinity);
    if (!fenced) return;
    if (fenced.stale) return void this.emit('stale', { term, newerTerm: fenced.head.term });
    // Nothing before the newest claim is ever reconsidered; a fresh lock has missed nothing.
    let cursor = fenced.head.lastSlotMs ?? this.clock.wallMs();
    let armed: number | undefined;
    let skipped = 0;
    while (!active.aborted) {
      const now = this.clock.wallMs();
      const plan = planSlots(this.schedule, cursor, now, armed, this.missed);
      armed = undefined;
      cursor = plan.cursorMs;
      if (plan.skipped > 0) {
        skipped += plan.skipped;
        this.emit('skipped', { count: plan.skipped, term, throughMs: plan.run ? plan.run.slotMs - 1 : cursor });
      }
      if (plan.run) {
        if (this.elector.term !== term) break;
        const claim = await this.claim(term, plan.run, skipped, active);
        if (claim === 'stale') break;
        // A claim the store kept failing is given up: that slot does not run (at most once).
        if (claim === undefined) continue;
        skipped = 0;
        if (claim === 'taken') continue;
        await this.runSlot(term, claim, AbortSignal.any([leadership, this.abortRuns.signal]));
        continue;
      }
      const next = this.schedule.next(Math.max(cursor, now));
      if (next === null) break;
      armed = next;
      await sleep(this.clock, Math.min(MAX_SLEEP_MS, Math.max(0, next - this.clock.wallMs())), active).catch(() => {});
    }
  }

  private async claim(term: number, run: { slotMs: number; late: boolean }, skippedBefore: number, active: AbortSignal): Promise<SlotRecord | 'stale' | 'taken' | undefined> {
    const claim = randomUUID();
    const result = await this.retrying(
      () => claimSlot(this.ledger, this.lock, term, run.slotMs, this.writer, { claim, wallMs: this.clock.wallMs(), late: run.late, skippedBefore }),
      active,
    );
    if (!result) return undefined;
    if (result.ok) return result.record;
    if (result.reason === 'stale') {
      this.emit('stale', { term, newerTerm: result.head.term });
      return 'stale';
    }
    return 'taken';
  }

  private async runSlot(term: number, record: SlotRecord, signal: AbortSignal): Promise<void> {
    this.emit('claimed', record);
    const env = {
      BATON_LOCK: this.lock,
      BATON_TERM: String(term),
      BATON_SLOT: record.slot,
      BATON_IDENTITY: this.elector.identity,
    };
    const ctx: CronRunContext = { term, signal, env, lock: this.lock, slot: new Date(record.slotMs), late: !!record.late, identity: this.elector.identity };
    let outcome: RunOutcome;
    if (signal.aborted) {
      outcome = { kind: 'cut', reason: 'leadership ended before the run started' };
    } else {
      try {
        outcome = await this.runner(ctx);
      } catch (err) {
        outcome = { kind: 'exit', exitCode: 1, error: errorMessage(err) };
      }
    }
    // The outcome is worth recording even after leadership ended: only this process knows it.
    await this.retrying(() => finishSlot(this.ledger, this.lock, record.claim, outcome, this.clock.wallMs()), undefined);
    this.emit('finished', { ...record, status: statusOf(outcome), outcome });
  }

  /** retrying runs a ledger write, retrying store failures `attempts` times one retry period apart. */
  private async retrying<T>(fn: () => Promise<T>, signal: AbortSignal | undefined, attempts = WRITE_ATTEMPTS): Promise<T | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        this.report(err);
        if (attempt >= attempts || signal?.aborted) return undefined;
        await sleep(this.clock, this.elector.timing.retryPeriodMs, signal).catch(() => {});
      }
    }
  }

  private report(err: unknown): void {
    const e = err instanceof Error ? err : new StoreUnavailableError(errorMessage(err));
    if (this.listenerCount('storeError') > 0) this.emit('storeError', e);
  }
}

/**
 * cronJob creates and starts a CronJob that runs `fn` on the leader only. `fn` gets the slot,
 * the term (fencing token) and a signal aborted when leadership ends or the job stops; it must
 * honour the signal — a function cannot be killed, and the job waits for it before going on.
 * Resolved = `ok`, thrown = `failed`, still running when the signal aborted = `cut`.
 */
export function cronJob(store: LeaseStore, lock: string, options: CronJobOptions, fn: JobFunction<CronRunContext>): CronJob {
  return new CronJob(store, lock, options, (ctx) => functionRunner(fn, ctx)).start();
}
