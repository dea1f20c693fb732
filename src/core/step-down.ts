import { realClock, sleep, type Clock } from './clock.js';
import { LeaseLostError } from './errors.js';
import type { LeaseRecord, LeaseStore } from './store.js';
import { sameRecordWith } from './handover.js';

/**
 * STEP_DOWN_INSTANCE_LEAVING is the step-down reason for "this host is going away" (Auto Scaling
 * termination): the holder's runner ends with exit 79 (ExitCode.leaving, cli/exit-codes.ts) instead of campaigning again.
 */
export const STEP_DOWN_INSTANCE_LEAVING = 'instance-leaving';

/** stepDownNoteOf is the reason a requester wrote with the step-down flag (see `reason` below), if any. */
export function stepDownNoteOf(record: LeaseRecord): string | undefined {
  return record.stepDownRequested && typeof record.metadata.stepDownReason === 'string' ? record.metadata.stepDownReason : undefined;
}

/**
 * StepDownOutcome: `released` (the lease changed hands or is free), `not-holder` (nobody, or
 * not `identity`, holds it), or `expired`: the holder stopped renewing — its record stayed
 * unchanged for a whole lease duration as this process counted — so its lease ran out and any
 * candidate may take it; nothing was freed by us.
 */
export type StepDownOutcome =
  | { readonly outcome: 'released'; readonly record: LeaseRecord | null }
  | { readonly outcome: 'not-holder'; readonly record: LeaseRecord | null }
  | { readonly outcome: 'expired'; readonly record: LeaseRecord };

/**
 * requestStepDown asks the holder of `lock` (or only `identity`, if given) to step down by
 * setting the step-down flag in its record; the holder stops its work first, then releases.
 * It never frees a lease itself: a holder that may still act is never overridden. Resolves once
 * the lease has changed hands or is free, or once the holder is seen not to renew (`expired`:
 * a dead holder does not hold the caller for the whole timeout); rejects with LeaseLostError
 * after `timeoutMs`. `reason`, if given, goes into the record's metadata as `stepDownReason`
 * with the flag; the holder's elector reports it as `note` on its `stopped` event.
 */
export async function requestStepDown(
  store: LeaseStore,
  lock: string,
  options: { identity?: string; timeoutMs?: number; clock?: Clock; pollMs?: number; reason?: string } = {},
): Promise<StepDownOutcome> {
  const clock = options.clock ?? realClock;
  const deadline = clock.monotonicMs() + (options.timeoutMs ?? 30_000);
  let record = await store.read(lock);
  if (!record || record.holder === null || (options.identity && record.holder !== options.identity)) {
    return { outcome: 'not-holder', record };
  }
  const target = { holder: record.holder, term: record.term };
  // 1. Set the flag with a compare-and-set that keeps holder and term.
  while (!record.stepDownRequested || (options.reason !== undefined && record.metadata.stepDownReason !== options.reason)) {
    const metadata = options.reason !== undefined ? { ...record.metadata, stepDownReason: options.reason } : record.metadata;
    const result = await store.write(lock, record.revision, { ...sameRecordWith(record, metadata), stepDownRequested: true });
    if (result.ok) break;
    const current = result.current !== undefined ? result.current : await store.read(lock);
    if (!current || current.holder !== target.holder || current.term !== target.term) {
      return { outcome: 'released', record: current };
    }
    record = current;
  }
  // 2. Wait until the holder has let go (or the lease moved on). A record whose revision stays
  //    the same for a whole lease duration, timed on our own clock from when we first saw it,
  //    is not being renewed (the elector's expiry rule): say so rather than wait on.
  const pollMs = options.pollMs ?? 50;
  let seen = { revision: record.revision, atMs: clock.monotonicMs() };
  for (;;) {
    const current = await store.read(lock);
    if (!current || current.holder !== target.holder || current.term !== target.term) {
      return { outcome: 'released', record: current };
    }
    if (current.revision !== seen.revision) seen = { revision: current.revision, atMs: clock.monotonicMs() };
    else if (clock.monotonicMs() - seen.atMs >= current.leaseDurationMs) return { outcome: 'expired', record: current };
    if (clock.monotonicMs() >= deadline) {
      throw new LeaseLostError(`release: "${lock}" is still held by ${target.holder} (term ${target.term}) after the timeout`);
    }
    await sleep(clock, pollMs);
  }
}
