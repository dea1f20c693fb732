/**
 * waitForTermination polls instance metadata `/latest/meta-data/autoscaling/target-lifecycle-state`
 * until Auto Scaling says this instance is on its way out, so a hand-over (drain.ts) can start
 * while a termination lifecycle hook holds the instance in Terminating:Wait.
 *
 * States that end the wait: `Terminated` (scale-in, instance refresh, replacement) and the
 * `Warmed:*` states (the instance is going back to a warm pool: stopped, hibernated or
 * terminated — its processes stop either way). `Standby` and `Detached` do not: the instance
 * keeps running, and so may its leader.
 */
import { realClock, sleep, type Clock } from '../core/clock.js';
import { errorMessage } from '../core/errors.js';
import { AwsRequestError } from './errors.js';
import type { InstanceMetadata } from './imds.js';

/** LEAVING_STATES are the target lifecycle states that mean "hand over now". */
export const LEAVING_STATES: readonly string[] = Object.freeze(['Terminated', 'Warmed:Terminated', 'Warmed:Stopped', 'Warmed:Hibernated']);

/** WatchOptions: how often to poll, and how to stop waiting. */
export interface WatchOptions {
  imds: InstanceMetadata;
  /** Poll interval; default 5 s (Auto Scaling holds the instance for the hook's whole timeout). */
  intervalMs?: number;
  signal?: AbortSignal;
  clock?: Clock;
  /** Told about metadata errors (polling goes on: the metadata service restarts, too). */
  log?: (line: string) => void;
}

/**
 * waitForTermination resolves with the leaving state once it appears. Rejects with
 * AwsRequestError (78) if the instance is in no Auto Scaling group (the path does not exist on
 * the first poll), or with the signal's reason when aborted.
 */
export async function waitForTermination(options: WatchOptions): Promise<string> {
  const clock = options.clock ?? realClock;
  const intervalMs = options.intervalMs ?? 5_000;
  for (let poll = 0; ; poll++) {
    options.signal?.throwIfAborted();
    try {
      const state = await options.imds.get('autoscaling/target-lifecycle-state');
      if (state === null && poll === 0) {
        throw new AwsRequestError('aws: instance metadata has no autoscaling/target-lifecycle-state: this instance is not in an Auto Scaling group', 'NotInGroup');
      }
      if (state !== null && LEAVING_STATES.includes(state.trim())) return state.trim();
    } catch (err) {
      if (err instanceof AwsRequestError) throw err;
      options.log?.(`instance metadata: ${errorMessage(err)}; still watching`);
    }
    await sleep(clock, intervalMs, options.signal);
  }
}
