/**
 * Interval arithmetic on the shared monotonic timeline: where several processes led at once,
 * and where nobody did.
 */

/** Interval is [start, end) in ms, owned by `who`. */
export interface Interval {
  readonly start: number;
  readonly end: number;
  readonly who: string;
}

/** Span is a stretch of time and the owners present during it. */
export interface Span {
  readonly start: number;
  readonly end: number;
  readonly who: string[];
}

/** overlaps returns the stretches during which at least two intervals hold, merged. */
export function overlaps(intervals: readonly Interval[]): Span[] {
  const out: Span[] = [];
  sweep(intervals, (start, end, live) => {
    if (live.size < 2) return;
    const last = out[out.length - 1];
    if (last && last.end === start) {
      out[out.length - 1] = { start: last.start, end, who: [...new Set([...last.who, ...live])] };
    } else {
      out.push({ start, end, who: [...live] });
    }
  });
  return out;
}

/** holes returns the stretches of [from, to) that no interval covers. */
export function holes(intervals: readonly Interval[], from: number, to: number): Span[] {
  const sorted = intervals.filter((i) => i.end > i.start).sort((a, b) => a.start - b.start);
  const out: Span[] = [];
  let covered = from;
  for (const i of sorted) {
    if (i.start > covered && i.start > from) out.push({ start: covered, end: Math.min(i.start, to), who: [] });
    covered = Math.max(covered, i.end);
    if (covered >= to) break;
  }
  if (covered < to) out.push({ start: covered, end: to, who: [] });
  return out.filter((h) => h.end > h.start);
}

/** totalMs sums span lengths. */
export function totalMs(spans: readonly Span[]): number {
  return spans.reduce((sum, s) => sum + (s.end - s.start), 0);
}

/** clip limits intervals to [from, to), dropping empty ones. */
export function clip(intervals: readonly Interval[], from: number, to: number): Interval[] {
  return intervals
    .map((i) => ({ ...i, start: Math.max(i.start, from), end: Math.min(i.end, to) }))
    .filter((i) => i.end > i.start);
}

/** percentile of a list of numbers (nearest rank); NaN for an empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** sweep calls `visit` for each elementary stretch between interval edges with the owners live in it. */
function sweep(intervals: readonly Interval[], visit: (start: number, end: number, live: Set<string>) => void): void {
  const edges: { t: number; delta: 1 | -1; who: string }[] = [];
  for (const i of intervals) {
    if (i.end <= i.start) continue;
    edges.push({ t: i.start, delta: 1, who: i.who }, { t: i.end, delta: -1, who: i.who });
  }
  // Ends before starts at the same instant: touching intervals do not overlap.
  edges.sort((a, b) => a.t - b.t || a.delta - b.delta);
  const live = new Map<string, number>();
  for (let k = 0; k < edges.length; k++) {
    const e = edges[k]!;
    live.set(e.who, (live.get(e.who) ?? 0) + e.delta);
    if (live.get(e.who) === 0) live.delete(e.who);
    const next = edges[k + 1];
    if (next && next.t > e.t && live.size > 0) visit(e.t, next.t, new Set(live.keys()));
  }
}
