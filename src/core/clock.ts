import { StoreUnavailableError } from './errors.js';

/**
 * Clock is the only source of time the core uses. `monotonicMs` orders events inside one
 * process and drives every safety deadline; `wallMs` is only ever written into records for
 * people to read. Nothing in baton compares wall times taken on different hosts.
 */
export interface Clock {
  /** Milliseconds on a clock that never jumps (performance.now() by default). */
  monotonicMs(): number;
  /** Wall-clock milliseconds since the epoch; informational only. */
  wallMs(): number;
  /** Schedules `fn` after `ms` monotonic milliseconds; returns a handle for clearTimer. */
  setTimer(fn: () => void, ms: number): TimerHandle;
  clearTimer(handle: TimerHandle): void;
}

export type TimerHandle = { readonly __timer: unique symbol } | object;

/** realClock uses performance.now() and Node timers. A running elector keeps the process alive until stopped. */
export const realClock: Clock = Object.freeze({
  monotonicMs: () => performance.now(),
  wallMs: () => Date.now(),
  setTimer(fn: () => void, ms: number): TimerHandle {
    return setTimeout(fn, Math.max(0, ms)) as unknown as TimerHandle;
  },
  clearTimer(handle: TimerHandle): void {
    clearTimeout(handle as unknown as NodeJS.Timeout);
  },
});

/** sleep waits `ms` on `clock`, or rejects early with the signal's reason. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clock.clearTimer(handle);
      reject(signal!.reason);
    };
    const handle = clock.setTimer(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** withDeadline rejects with StoreUnavailableError if `p` takes longer than `ms` on `clock`. */
export function withDeadline<T>(p: Promise<T>, ms: number, clock: Clock): Promise<T> {
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
