/**
 * The README's three examples, run as a reader would paste them: each block follows a
 * `<!-- readme-test: NAME -->` marker and is taken from the README at test time, so an example
 * that stops working fails here. The store is a private SQLite file (BATON_STORE), and the
 * package resolves by its published name through a node_modules link to this checkout.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { BATON_BIN, ROOT, TempDir, cleanEnv, runCli, waitFor } from './harness/cli.js';

const readme = readFileSync(`${ROOT}/README.md`, 'utf8');
const pkgName = (JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { name: string }).name;

/** block returns the code of the fenced block right after `<!-- readme-test: name -->`. */
function block(name: string): string {
  const m = new RegExp(`<!-- readme-test: ${name} -->\\s*\`\`\`\\w*\\n([\\s\\S]*?)\`\`\``).exec(readme);
  assert.ok(m, `README has no block marked readme-test: ${name}`);
  return m[1]!.trim();
}

const dir = new TempDir();
after(() => dir.remove());
const env = cleanEnv(dir.path, { BATON_STORE: dir.sqlite('readme.db'), PATH: `${dir.join('bin')}:${process.env.PATH}` });
// `baton` on PATH, as `npm install` puts it in node_modules/.bin.
mkdirSync(dir.join('bin'));
writeFileSync(dir.join('bin', 'baton'), `#!/bin/sh\nexec "${process.execPath}" "${BATON_BIN}" "$@"\n`);
chmodSync(dir.join('bin', 'baton'), 0o755);

describe('README examples', () => {
  test('node-service: the leader runs, and on SIGTERM a standby takes over with a higher term', async () => {
    mkdirSync(dir.join('node_modules'));
    symlinkSync(ROOT, dir.join('node_modules', pkgName));
    writeFileSync(dir.join('service.mjs'), block('node-service'));
    const start = () => {
      const child = spawn(process.execPath, ['service.mjs'], { cwd: dir.path, env, stdio: ['ignore', 'pipe', 'pipe'] });
      const out = { text: '' };
      child.stdout!.on('data', (b: Buffer) => (out.text += b.toString()));
      child.stderr!.on('data', (b: Buffer) => (out.text += b.toString()));
      return { child, out };
    };
    const a = start();
    await waitFor('the first instance to lead', () => a.out.text.includes('leading with fencing token 1'), 15_000);
    const b = start();
    await new Promise((r) => setTimeout(r, 300));
    assert.doesNotMatch(b.out.text, /leading/, 'the standby does not lead while the leader lives');
    a.child.kill('SIGTERM');
    await waitFor('the standby to take over', () => b.out.text.includes('leading with fencing token 2'), 15_000);
    assert.match(a.out.text, /no longer leader: stopped/);
    b.child.kill('SIGTERM');
    await new Promise((r) => b.child.once('exit', r));
  });

  test('cron-line: two copies at once, the script runs exactly once', async () => {
    const line = block('cron-line');
    const command = line.split(/\s+/).slice(5); // drop the five crontab time fields
    assert.equal(command[0], 'baton');
    writeFileSync(dir.join('report.sh'), '#!/bin/sh\necho ran >> runs.log\nsleep 1\n');
    chmodSync(dir.join('report.sh'), 0o755);
    const results = await Promise.all([0, 1].map(() => runCli(command.slice(1), { env, cwd: dir.path, timeoutMs: 30_000 })));
    assert.deepEqual(results.map((r) => r.code), [0, 0], results.map((r) => r.stderr).join('\n'));
    assert.equal(readFileSync(dir.join('runs.log'), 'utf8').trim().split('\n').length, 1);
  });

  test('migrations: `baton once` runs the migration once per release, even when asked again', async () => {
    const line = block('migrations');
    const argv = line.replace('"migrate-$RELEASE"', 'migrate-v42').split(/\s+/);
    assert.deepEqual(argv.slice(0, 4), ['baton', 'once', '--key', 'migrate-v42']);
    writeFileSync(dir.join('package.json'), JSON.stringify({ name: 'app', private: true, scripts: { migrate: 'echo migrated >> migrations.log' } }));
    const first = await Promise.all([0, 1].map(() => runCli(argv.slice(1), { env, cwd: dir.path, timeoutMs: 60_000 })));
    assert.deepEqual(first.map((r) => r.code), [0, 0], first.map((r) => r.stderr).join('\n'));
    const again = await runCli(argv.slice(1), { env, cwd: dir.path, timeoutMs: 60_000 });
    assert.equal(again.code, 0, again.stderr);
    assert.equal(readFileSync(dir.join('migrations.log'), 'utf8').trim().split('\n').length, 1);
  });
});
