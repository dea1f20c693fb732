/**
 * renderHandoverSvg draws the graceful-handover latency distribution of every system as a
 * hand-written SVG: one row per system on a logarithmic time axis, each sample a dot, a box from
 * p25 to p75, a bar at the median and a tick at p99. Computed figures (no samples) are drawn as
 * a dashed outline from p50 to p99 with the median marked.
 */
import { percentile } from './stats.js';
import type { BenchResults, ResultRow } from './results.js';

const WIDTH = 960;
const LEFT = 240;
const RIGHT = 30;
const TOP = 56;
const ROW = 34;
const MIN_MS = 0.1;
const MAX_MS = 30_000;

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function x(ms: number): number {
  const clamped = Math.min(MAX_MS, Math.max(MIN_MS, ms));
  const span = Math.log10(MAX_MS) - Math.log10(MIN_MS);
  return LEFT + ((Math.log10(clamped) - Math.log10(MIN_MS)) / span) * (WIDTH - LEFT - RIGHT);
}

function label(ms: number): string {
  return ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`;
}

/** A deterministic jitter, so the same results always draw the same picture. */
function jitter(i: number): number {
  const v = Math.sin(i * 12.9898) * 43758.5453;
  return v - Math.floor(v) - 0.5;
}

function colour(row: ResultRow): string {
  if (row.computed) return '#8a8a8a';
  return row.system.startsWith('baton-') ? '#1f6feb' : '#d9480f';
}

/** renderHandoverSvg returns the SVG text for handover.svg. */
export function renderHandoverSvg(results: BenchResults): string {
  const rows = results.results
    .filter((r) => r.metric === 'graceful_handover_ms' && r.p50 !== undefined)
    .sort((a, b) => a.p50! - b.p50!);
  const height = TOP + rows.length * ROW + 48;
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="12">`);
  parts.push(`<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`);
  parts.push(`<text x="${LEFT}" y="22" font-size="15" font-weight="600" fill="#111">Graceful handover: leader releases → next candidate elected</text>`);
  parts.push(`<text x="${LEFT}" y="40" fill="#555">log scale · dots: samples · box: p25–p75 · bar: median · tick: p99 · blue: baton · orange: peers · grey: computed</text>`);
  const bottom = TOP + rows.length * ROW;
  for (let decade = MIN_MS; decade <= MAX_MS; decade *= 10) {
    for (const m of [1, 2, 5]) {
      const ms = decade * m;
      if (ms > MAX_MS) break;
      const major = m === 1;
      parts.push(`<line x1="${x(ms).toFixed(1)}" y1="${TOP - 6}" x2="${x(ms).toFixed(1)}" y2="${bottom}" stroke="${major ? '#d0d0d0' : '#eeeeee'}"/>`);
      if (major) parts.push(`<text x="${x(ms).toFixed(1)}" y="${bottom + 16}" text-anchor="middle" fill="#555">${label(Math.round(ms * 10) / 10)}</text>`);
    }
  }
  rows.forEach((row, i) => {
    const cy = TOP + i * ROW + ROW / 2;
    const c = colour(row);
    parts.push(`<text x="${LEFT - 10}" y="${cy + 4}" text-anchor="end" fill="#111">${esc(row.system)}${row.computed ? ' (computed)' : ''}</text>`);
    const samples = [...(row.samples ?? [])].sort((a, b) => a - b);
    if (samples.length > 0) {
      samples.forEach((s, k) => parts.push(`<circle cx="${x(s).toFixed(1)}" cy="${(cy + jitter(k) * (ROW - 12)).toFixed(1)}" r="1.6" fill="${c}" fill-opacity="0.35"/>`));
      const q1 = percentile(samples, 25);
      const q3 = percentile(samples, 75);
      parts.push(`<rect x="${x(q1).toFixed(1)}" y="${cy - 8}" width="${Math.max(1.5, x(q3) - x(q1)).toFixed(1)}" height="16" fill="${c}" fill-opacity="0.18" stroke="${c}"/>`);
    } else {
      parts.push(`<rect x="${x(row.p50!).toFixed(1)}" y="${cy - 8}" width="${Math.max(1.5, x(row.p99!) - x(row.p50!)).toFixed(1)}" height="16" fill="none" stroke="${c}" stroke-dasharray="4 3"/>`);
    }
    parts.push(`<line x1="${x(row.p50!).toFixed(1)}" y1="${cy - 11}" x2="${x(row.p50!).toFixed(1)}" y2="${cy + 11}" stroke="${c}" stroke-width="3"/>`);
    parts.push(`<line x1="${x(row.p99!).toFixed(1)}" y1="${cy - 6}" x2="${x(row.p99!).toFixed(1)}" y2="${cy + 6}" stroke="${c}" stroke-width="1.5"/>`);
    const text = `p50 ${fmtMs(row.p50!)} · p99 ${fmtMs(row.p99!)}`;
    const tx = x(row.p99!) + 8;
    const anchor = tx > WIDTH - 140 ? 'end' : 'start';
    parts.push(`<text x="${(anchor === 'end' ? x(row.p50!) - 8 : tx).toFixed(1)}" y="${cy + 4}" text-anchor="${anchor}" fill="#333" font-size="11">${text}</text>`);
  });
  parts.push(`<text x="${LEFT}" y="${height - 10}" fill="#777" font-size="11">${esc(`${results.machine.cores} × ${results.machine.cpuModel} · Node ${results.machine.node} · ${results.machine.mode} run ${results.machine.startedAt.slice(0, 10)}`)}</text>`);
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

function fmtMs(ms: number): string {
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 100) return `${Math.round(ms)} ms`;
  return `${ms.toFixed(ms >= 10 ? 1 : 2)} ms`;
}
