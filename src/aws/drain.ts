/**
 * Hand-over before termination. When Auto Scaling is about to terminate an instance (scale-in,
 * instance refresh, health replacement) and a termination lifecycle hook holds it in
 * `Terminating:Wait`, drainInstance
 *
 * 1. asks every local holder of the given locks to step down (requestStepDown: the holder stops
 *    its work first, then releases; a lease is never freed behind a holder that may still act);
 * 2. waits until each has released, so a standby elsewhere takes over at once instead of after a
 *    whole lease duration;
 * 3. completes the lifecycle action (CONTINUE) so the termination goes ahead without waiting for
 *    the hook's heartbeat timeout.
 *
 * Step 3 runs even when a step-down timed out or the store was unreachable: the instance goes
 * away whatever happens, and its holder (if any) is killed with it and loses its lease by its
 * own deadline; holding the instance longer would only delay the scale-in.
 */
import { hostname as osHostname } from 'node:os';
import { connectAws, type AwsApi } from './api.js';
import { errorMessage, InvalidConfigError, LeaseLostError } from '../core/errors.js';
import { requestStepDown, STEP_DOWN_INSTANCE_LEAVING } from '../core/step-down.js';
import type { LeaseStore } from '../core/store.js';
import { AwsRequestError } from './errors.js';
import { InstanceMetadata, resolveRegion } from './imds.js';

/** DrainOptions: the locks to hand over and the lifecycle hook to complete. */
export interface DrainOptions {
  /**
   * The store holding the locks (needed when `locks` is not empty), or a function that opens it:
   * then a store that cannot be opened fails only the hand-over, not the lifecycle completion.
   */
  store?: LeaseStore | (() => Promise<LeaseStore>);
  /** Locks to hand over if held on this host. */
  locks: readonly string[];
  /** Only hand over leases held by this identity (default: any holder on this host). */
  identity?: string;
  /** This host's name as holders record it; default os.hostname(). */
  hostname?: string;
  /** How long to wait for each holder to release; default 30 s. */
  timeoutMs?: number;
  /** Lifecycle hook to complete; without it no lifecycle action is completed. */
  hook?: string;
  /** The instance's group; default: looked up with DescribeAutoScalingInstances. */
  group?: string;
  imds?: InstanceMetadata;
  api?: AwsApi;
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

/** LockHandOver is how one lock's hand-over ended. */
export interface LockHandOver {
  readonly lock: string;
  readonly outcome: 'released' | 'not-held-here' | 'timeout' | 'failed';
  /** The local holder that was asked to step down. */
  readonly holder?: string;
  /** Who holds it now, if anyone (after a release). */
  readonly nowHeldBy?: string | null;
  readonly error?: string;
}

/**
 * DrainResult: per-lock outcomes and the lifecycle completion, with the errors behind any
 * failure (the CLI maps them to its exit code; the library names no exit codes).
 */
export interface DrainResult {
  readonly locks: LockHandOver[];
  readonly lifecycle: { readonly instanceId: string; readonly group: string; readonly hook: string } | null;
  readonly lifecycleError?: string;
  /** The errors behind the `failed` hand-overs, in the order of `locks`. */
  readonly handOverErrors: readonly unknown[];
  /** The error behind `lifecycleError`, if any. */
  readonly lifecycleCause?: unknown;
}

/** drainInstance hands over local leases, then completes the lifecycle action (see above). */
export async function drainInstance(options: DrainOptions): Promise<DrainResult> {
  const host = options.hostname ?? osHostname();
  const log = options.log ?? (() => {});
  let opened: Promise<LeaseStore> | undefined;
  const store = () => {
    const s = options.store;
    if (!s) return Promise.reject(new InvalidConfigError('aws: drain: locks to hand over need a store'));
    return (opened ??= typeof s === 'function' ? s() : Promise.resolve(s));
  };
  const outcomes = await Promise.all(options.locks.map((lock) => handOver(store, options, lock, host, log)));
  const locks = outcomes.map((o) => o.result);
  const handOverErrors = outcomes.flatMap((o) => (o.result.outcome === 'failed' ? [o.cause] : []));
  if (!options.hook) return { locks, lifecycle: null, handOverErrors };
  try {
    const lifecycle = await completeTermination(options, options.hook);
    log(`completed lifecycle action ${lifecycle.hook} for ${lifecycle.instanceId} in ${lifecycle.group}`);
    return { locks, lifecycle, handOverErrors };
  } catch (err) {
    return { locks, lifecycle: null, lifecycleError: errorMessage(err), handOverErrors, lifecycleCause: err };
  }
}

async function handOver(
  openStore: () => Promise<LeaseStore>,
  options: DrainOptions,
  lock: string,
  host: string,
  log: (line: string) => void,
): Promise<{ result: LockHandOver; cause?: unknown }> {
  const done = (result: LockHandOver, cause?: unknown) => ({ result, cause });
  try {
    const store = await openStore();
    const record = await store.read(lock);
    const holder = record?.holder ?? null;
    const local = holder !== null && (options.identity ? holder === options.identity : record!.metadata.hostname === host);
    if (!local) return done({ lock, outcome: 'not-held-here' });
    log(`asking ${holder} to step down from "${lock}" (term ${record!.term})`);
    // Naming the holder makes the request a no-op if the lease changed hands since the read.
    // The reason tells the holder's runner this host is going away: it ends with exit 79
    // (ExitCode.leaving), which supervisors treat as done, instead of 75 and a restart.
    const r = await requestStepDown(store, lock, { identity: holder, timeoutMs: options.timeoutMs ?? 30_000, reason: STEP_DOWN_INSTANCE_LEAVING });
    if (r.outcome === 'not-holder') return done({ lock, outcome: 'not-held-here' });
    log(`"${lock}" released by ${holder}${r.record?.holder ? `; now held by ${r.record.holder}` : ''}`);
    return done({ lock, outcome: 'released', holder, nowHeldBy: r.record?.holder ?? null });
  } catch (err) {
    log(`"${lock}": ${errorMessage(err)}`);
    if (err instanceof LeaseLostError) return done({ lock, outcome: 'timeout', error: errorMessage(err) });
    return done({ lock, outcome: 'failed', error: errorMessage(err) }, err);
  }
}

async function completeTermination(options: DrainOptions, hook: string): Promise<{ instanceId: string; group: string; hook: string }> {
  const imds = options.imds ?? new InstanceMetadata({ env: options.env });
  const instanceId = await imds.instanceId();
  const api = options.api ?? connectAws({ region: await resolveRegion(imds, options.env) });
  try {
    let group = options.group;
    if (!group) {
      const own = await api.findGroupOf(instanceId);
      if (!own) throw new AwsRequestError(`aws: instance ${instanceId} is not in an Auto Scaling group`, 'NotInGroup');
      group = own.group;
    }
    await api.completeLifecycleAction({ group, hook, instanceId, result: 'CONTINUE' });
    return { instanceId, group, hook };
  } finally {
    if (!options.api) api.close();
  }
}
