/**
 * writeOutputs writes a run's files: `latest.json`, `latest.md` and `handover.svg` in the
 * plan's output directory (bench/results/ for a full run, bench/results/scratch/ otherwise).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { BenchPlan } from './plan.js';
import type { BenchResults } from './results.js';
import { renderMarkdown } from './report.js';
import { renderHandoverSvg } from './chart.js';

/** writeOutputs returns the paths written, relative to the working directory. */
export function writeOutputs(plan: BenchPlan, results: BenchResults): string[] {
  mkdirSync(plan.outDir, { recursive: true });
  const files: [string, string][] = [
    ['latest.json', `${JSON.stringify(results, null, 1)}\n`],
    ['latest.md', renderMarkdown(results)],
    ['handover.svg', renderHandoverSvg(results)],
  ];
  return files.map(([name, text]) => {
    const path = join(plan.outDir, name);
    writeFileSync(path, text);
    return relative(process.cwd(), path);
  });
}
