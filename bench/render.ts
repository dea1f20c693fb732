/**
 * `node --import tsx bench/render.ts [bench/results/latest.json]` — writes latest.md and
 * handover.svg again from a run's JSON, beside it, without running anything (for report changes).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { renderHandoverSvg } from './chart.js';
import { renderMarkdown } from './report.js';
import type { BenchResults } from './results.js';

const path = process.argv[2] ?? join(dirname(new URL(import.meta.url).pathname), 'results', 'latest.json');
let results: BenchResults;
try {
  results = JSON.parse(readFileSync(path, 'utf8')) as BenchResults;
} catch (err) {
  process.stderr.write(`bench: render: cannot read ${path}: ${(err as Error).message.split('\n')[0]}\n`);
  process.exit(66);
}
writeFileSync(join(dirname(path), 'latest.md'), renderMarkdown(results));
writeFileSync(join(dirname(path), 'handover.svg'), renderHandoverSvg(results));
process.stdout.write(`rendered ${join(dirname(path), 'latest.md')} and handover.svg\n`);
