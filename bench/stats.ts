/**
 * Summaries of samples. Percentiles use the nearest-rank method on the sorted samples, so a
 * reported p99 is always a value that was actually observed.
 */

/** Summary of a set of samples (ms unless the metric says otherwise). */
export interface Summary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  min: number;
  mean: number;
}

/** percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of already sorted samples. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

/** summarize sorts a copy of `samples` and returns its summary (NaN fields when empty). */
export function summarize(samples: readonly number[]): Summary {
  const s = [...samples].sort((a, b) => a - b);
  const mean = s.length ? s.reduce((a, b) => a + b, 0) / s.length : NaN;
  return { n: s.length, p50: percentile(s, 50), p90: percentile(s, 90), p99: percentile(s, 99), max: s[s.length - 1] ?? NaN, min: s[0] ?? NaN, mean };
}

/** round keeps `digits` decimals (3 by default) so the JSON stays readable. */
export function round(x: number, digits = 3): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
