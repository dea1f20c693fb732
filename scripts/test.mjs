#!/usr/bin/env node
// The test command: builds, then runs every test/**/*.test.ts with node's test runner.
// Usage: npm test [-- FILTER...]   (FILTER: substrings of test file paths; !SUBSTRING leaves out
// the files whose path contains it, e.g. `conformance !etcd/current/`)
// BATON_SKIP_BUILD=1 skips the build (for tests that do not spawn the CLI).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const filters = process.argv.slice(2);

const build = process.env.BATON_SKIP_BUILD ? { status: 0 } : spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.json')], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
// Tests, chaos and bench run through tsx, which does not type-check: check them here.
const typecheck = process.env.BATON_SKIP_BUILD ? { status: 0 } : spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.check.json')], { stdio: 'inherit' });
if (typecheck.status !== 0) process.exit(typecheck.status ?? 1);

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? walk(p) : p.endsWith('.test.ts') ? [p] : [];
  });
}
const include = filters.filter((x) => !x.startsWith('!'));
const exclude = filters.filter((x) => x.startsWith('!')).map((x) => x.slice(1));
const files = walk(join(root, 'test'))
  .filter((f) => (include.length === 0 || include.some((x) => f.includes(x))) && !exclude.some((x) => x !== '' && f.includes(x)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}
// TAP on stdout as before; beside it, the failed tests alone, printed again after the run.
const summaryDir = mkdtempSync(join(tmpdir(), 'baton-test-'));
const summary = join(summaryDir, 'failures.txt');
const run = spawnSync(
  process.execPath,
  [
    '--import', 'tsx', '--test', `--test-concurrency=${process.env.BATON_TEST_CONCURRENCY ?? 2}`,
    '--test-reporter=tap', '--test-reporter-destination=stdout',
    `--test-reporter=${join(root, 'scripts/failures-reporter.mjs')}`, `--test-reporter-destination=${summary}`,
    ...files,
  ],
  { stdio: 'inherit', cwd: root },
);
if (run.status === null) console.error(`test runner ended by ${run.signal ?? 'an unknown cause'}${run.error ? `: ${run.error.message}` : ''}`);
let failures = '';
try { failures = readFileSync(summary, 'utf8'); } catch { /* the runner wrote nothing */ }
rmSync(summaryDir, { recursive: true, force: true });
if (failures !== '') console.error(`\n== node ${process.version}: ${failures.trimEnd()}`);
process.exit(run.status ?? 1);
