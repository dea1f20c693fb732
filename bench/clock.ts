/**
 * One timeline for every process of a bench run: the host's CLOCK_MONOTONIC, which
 * `process.hrtime.bigint()` reads, is the same clock in every process on one host, so a
 * candidate's "elected" stamp and the harness's "killed" stamp can be subtracted directly.
 */

/** monoMs is CLOCK_MONOTONIC in milliseconds, comparable across processes on this host. */
export function monoMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/**
 * PERF_TO_MONO_MS turns a `performance.now()` reading (the elector's clock, counted from this
 * process's start) into a monoMs() reading: both come from the same kernel clock, so the
 * difference is constant. The smallest of a few back-to-back samples drops the gap between reads.
 */
export const PERF_TO_MONO_MS: number = (() => {
  let best = Infinity;
  for (let i = 0; i < 5; i++) {
    const p = performance.now();
    best = Math.min(best, monoMs() - p);
  }
  return best;
})();

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
