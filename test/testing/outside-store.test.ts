/**
 * The out-of-tree proof: a store written outside src/ (test/fixtures/outside-store/, a CasBackend
 * over a small key/value server in a child process) imports only the package's public exports —
 * the package itself, `/testing` and `/kit`, resolved by the package's name (read from
 * package.json) through a symlink in a temporary node_modules — and runs the whole public suite
 * with fault hooks. It must pass; a deliberately wrong copy, which forgets the term counter when a
 * record is deleted, must fail, on the fencing test. Both need the build (dist/).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
const name = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string }).name;
const dir = mkdtempSync(join(tmpdir(), 'baton-outside-'));
after(() => rmSync(dir, { recursive: true, force: true }));
// node_modules/<name> → this checkout, so `import(name)` goes through package.json's "exports".
mkdirSync(dirname(join(dir, 'node_modules', name)), { recursive: true });
symlinkSync(root, join(dir, 'node_modules', name), 'dir');
cpSync(join(root, 'test/fixtures/outside-store'), join(dir, 'store'), { recursive: true });

/** runFixture runs one fixture file under node's test runner (TAP), outside this repository. */
function runFixture(file: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    // Not a subtest of this run: without NODE_TEST_CONTEXT the child runs as a test run of its own.
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const child = spawn(process.execPath, ['--test', '--test-reporter=tap', file], {
      cwd: join(dir, 'store'),
      env: { ...env, BATON_PACKAGE: name, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b));
    child.stderr.on('data', (b: Buffer) => (out += b));
    child.on('close', (code) => resolve({ code, out }));
  });
}

const FENCING_AFTER_DELETE = 'terms strictly increase after an operator deletes the record';

describe('a store outside the package', { concurrency: true }, () => {
  it('passes the whole public suite, fault scenarios included, through the public exports only', async () => {
    const { code, out } = await runFixture('good.test.mjs');
    assert.equal(code, 0, out.slice(-3000));
    for (const title of [FENCING_AFTER_DELETE, 'terms strictly increase across a kill', 'server killed under a leader', 'server frozen past the lease', 'every connection cut', 'an unreachable store fails', 'close() is idempotent']) {
      assert.match(out, new RegExp(`^\\s*ok \\d+ - ${title.replace(/[()]/g, '\\$&')}`, 'm'), `ran and passed: ${title}`);
    }
  });

  it('a store that reuses a term after a record deletion fails the suite, on the fencing test', async () => {
    const { code, out } = await runFixture('wrong.test.mjs');
    assert.notEqual(code, 0, 'the wrong store must fail the suite');
    const failed = [...out.matchAll(/^\s*not ok \d+ - (.*)$/gm)].map((m) => m[1]!);
    assert.ok(failed.some((t) => t.startsWith(FENCING_AFTER_DELETE)), `failed: ${failed.join(' | ')}`);
    assert.ok(failed.every((t) => t.startsWith(FENCING_AFTER_DELETE) || t.endsWith(': fencing')), `only fencing fails: ${failed.join(' | ')}`);
  });
});
