import type { Clock } from './clock.js';
import type { Timing } from './options.js';
import type { HolderMetadata, LeaseRecord, LeaseStore } from './store.js';
import type { CandidateOptions } from './candidate-side.js';

/** StopReason tells why a leader stopped leading. */
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
  | 'lost'
  /**
   * The work was hung: no heartbeat within progressTimeoutMs (or, in the CLI, a failing health
   * command). The leader stepped down, released, and backs off before campaigning again.
   */
  | 'hung'
  /** A directed handover (core/handover.ts): the work stopped, then the lease went to the named successor. */
  | 'handover';

/** ElectedEvent starts a leadership. */
export interface ElectedEvent {
  readonly term: number;
  /** Aborted (with a LeaseLostError) the moment this leadership ends, at its deadline at the latest. */
  readonly signal: AbortSignal;
  /**
   * The monotonic instant (on the elector's clock) by which this leadership ends unless renewed.
   * It may already be past when a slow acquisition came back just in time: `stopped` follows.
   */
  readonly deadlineMs: number;
  /**
   * heartbeat tells the elector the work made progress. With `progressTimeoutMs` set, a leader
   * that hears none for that long steps down ('hung'), releases and backs off (core/hang-backoff.ts);
   * without it, heartbeat does nothing. Calls after the leadership ended are ignored.
   */
  heartbeat(): void;
}
/** StoppedEvent ends a leadership; always follows its ElectedEvent. */
export interface StoppedEvent {
  readonly term: number;
  readonly reason: StopReason;
  /** With 'step-down-requested': the reason the requester gave (requestStepDown's `reason`); with 'hung': why. */
  readonly note?: string;
}
/** LeaderEvent is who leads, as a candidate last saw it. */
export interface LeaderEvent {
  /** Current holder, or null when nobody holds the lease. */
  readonly holder: string | null;
  readonly term: number;
  readonly isSelf: boolean;
  readonly record: LeaseRecord | null;
}
/** RenewedEvent reports one successful renewal and how long its round trip took. */
export interface RenewedEvent {
  readonly term: number;
  readonly durationMs: number;
}

/** ElectorEvents maps each event of a LeaderElector to its arguments. */
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
  /**
   * Step down when the work reports no progress (the `elected` event's `heartbeat()`) for this
   * long, counted from the election: the leader aborts its signal, emits `stopped` ('hung'),
   * releases, and backs off before campaigning again (growing, capped: core/hang-backoff.ts).
   * Default: none (leadership does not depend on progress).
   */
  progressTimeoutMs?: number;
  /**
   * Awaited before this candidate releases a lease it led (a step-down asked for, stop(),
   * resign(), no progress), with the term being given up: resolve once the work of that term
   * has stopped. Until then the lease is neither renewed nor released, so nobody else can lead
   * before the work is done or the lease has run out. `baton run` waits here for its command to
   * exit. Default: none (the release follows the signal's abort at once).
   */
  beforeRelease?: (term: number) => Promise<void>;
  /**
   * Registers this candidate in the lock's candidate registry (core/candidates.ts; stores with a
   * ledger) with what it says of itself, and sets its preference rule: with `prefer`, a leader
   * hands over once, drain-first, to a live candidate ranking strictly higher that has been
   * present for a retry period. A registered leader that stops hands over to the best live
   * candidate instead of releasing to a race. Default: not registered (no requests at rest).
   */
  candidate?: CandidateOptions;
}

/** nextElected resolves with the next `elected` event of `emitter`, or rejects when `signal` aborts. */
export function nextElected(emitter: { once(e: 'elected', f: (e: ElectedEvent) => void): unknown; off(e: 'elected', f: (e: ElectedEvent) => void): unknown }, signal?: AbortSignal): Promise<ElectedEvent> {
  return new Promise((resolve, reject) => {
    const onElected = (e: ElectedEvent) => {
      signal?.removeEventListener('abort', onAbort);
      resolve(e);
    };
    const onAbort = () => {
      emitter.off('elected', onElected);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    emitter.once('elected', onElected);
  });
}
