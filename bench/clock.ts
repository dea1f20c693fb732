/**
 * One timeline for every process of a bench run: the host's CLOCK_MONOTONIC, shared by every
 * process on one host, so a candidate's "elected" stamp and the harness's "killed" stamp can be
 * subtracted directly. The readings are the chaos harness's own (chaos/clock.ts).
 */
import { monoMs } from '../chaos/clock.js';

export { monoMs, PERF_TO_MONO_MS } from '../chaos/clock.js';

/** sleep waits `ms` on Node's timers. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/** randomBetween is a uniform pick in [lo, hi), used to vary when a release or kill lands. */
export function randomBetween(lo: number, hi: number): number {
  return lo + Math.random() * (hi - lo);
}

/**
 * waitFor polls `check` every `everyMs` until it returns a value other than undefined, or
 * throws after `timeoutMs` naming `what`.
 */
export async function waitFor<T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeoutMs = 30_000, everyMs = 5): Promise<T> {
  const until = monoMs() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (monoMs() > until) throw new Error(`bench: timed out after ${timeoutMs}ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
