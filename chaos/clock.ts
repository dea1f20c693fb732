/**
 * One timeline for every process of a chaos run.
 *
 * Each process (harness, register, candidates) stamps its log lines with `monoMs()`, a reading
 * of the host's CLOCK_MONOTONIC. Processes on one host share that clock, so their logs can be
 * merged without any clock agreement. libfaketime leaves it alone when started with
 * FAKETIME_DONT_FAKE_MONOTONIC=1, which is how clock faults are run: only wall time jumps.
 */

/** monoMs is the host's CLOCK_MONOTONIC in milliseconds (shared by all local processes). */
export function monoMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/**
 * PERF_TO_MONO_MS is added to a `performance.now()` reading (the elector's default monotonic
 * clock, which counts from this process's start) to put it on the `monoMs()` timeline.
 * Both read the same kernel clock, so the difference is constant; the smallest of a few
 * back-to-back samples removes the time between the two reads.
 */
export const PERF_TO_MONO_MS: number = (() => {
  let best = Infinity;
  for (let i = 0; i < 5; i++) {
    const p = performance.now();
    const m = monoMs();
    best = Math.min(best, m - p);
  }
  return best;
})();

/** sleepMs waits `ms` on Node's timers. */
export function sleepMs(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
