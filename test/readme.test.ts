/**
 * The README's examples and shell blocks, run as a reader would paste them: each block follows a
 * `<!-- readme-test: NAME -->` marker and is taken from the README at test time, so an example
 * that stops working fails here, and a shell block without a marker naming a test fails too.
 * The store is a private SQLite file (BATON_STORE), and the package resolves by its published
 * name through a node_modules link to this checkout. The `install` block runs in
 * test/package/pack.test.ts, against the packed package.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { BATON_BIN, BatonProcess, ROOT, TempDir, cleanEnv, runCli, waitFor } from './harness/cli.js';
import { docBlocks } from './harness/doc-blocks.js';

/** TESTED names every README shell block's test: here, or `install` in test/package/pack.test.ts. */
const TESTED = ['clone', 'install', 'cron-line', 'migrations', 'any-language'];

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

  test('every shell block of the README carries a readme-test marker that names its test', () => {
    const shell = docBlocks(ROOT, 'README.md').filter((b) => b.lang === 'sh' || b.lang === 'bash');
    assert.ok(shell.length >= TESTED.length, `only ${shell.length} shell blocks`);
    for (const b of shell) {
      const name = b.comments.map((c) => /^readme-test: (\S+)$/.exec(c)?.[1]).find(Boolean);
      assert.ok(name && TESTED.includes(name), `README.md:${b.line}: a shell block without a tested readme-test marker (${name ?? 'none'})`);
    }
  });

  test('clone: `npm ci` is what CI runs first on its fresh clone; `npx baton demo` then runs the tour', async () => {
    const [first, second] = block('clone').split('\n').map((l) => l.replace(/#.*$/, '').trim());
    const steps = first!.split('&&').map((x) => x.trim());
    assert.deepEqual(steps.slice(0, 1), ['npm ci']);
    // CI runs scripts/test-all.sh on a fresh clone, and that script's own install is this `npm ci`:
    // running it here would replace node_modules under the other tests.
    assert.match(readFileSync(`${ROOT}/scripts/test-all.sh`, 'utf8'), /^npm ci\b/m);
    assert.equal(second, 'bash scripts/test-all.sh');
    const npmExec = steps[1]!.split(/\s+/);
    assert.deepEqual(npmExec.slice(0, 2), ['npx', 'baton']);
    const home = new TempDir();
    try {
      // The default store (no BATON_STORE): the embedded SQLite file under a private XDG_STATE_HOME.
      const r = spawnSync(npmExec[0]!, npmExec.slice(1), { cwd: ROOT, env: cleanEnv(home.path), encoding: 'utf8', timeout: 120_000 });
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, /crash failover/);
      assert.match(r.stdout, /terms: 1 → 2 → 3/);
    } finally {
      home.remove();
    }
  });

  test('any-language: the PHP line runs only on the leader, and status prints the lock as JSON', async () => {
    // `php` here is a stand-in for the reader's own app: a script that records that it ran.
    writeFileSync(dir.join('bin', 'php'), '#!/bin/sh\necho "$@" >> php.log\n');
    chmodSync(dir.join('bin', 'php'), 0o755);
    writeFileSync(dir.join('any-language.sh'), block('any-language'));
    const sh = () => spawnSync('sh', ['-e', 'any-language.sh'], { cwd: dir.path, env, encoding: 'utf8', timeout: 30_000 });
    const janitor = new BatonProcess(['run', '--lock', 'queue-janitor', '--', 'sleep', '60'], { env, cwd: dir.path });
    const report = new BatonProcess(['run', '--lock', 'nightly-report', '--', 'sleep', '60'], { env, cwd: dir.path });
    try {
      await waitFor('both locks to be held', async () => (await runCli(['is-leader', '--lock', 'queue-janitor'], { env })).code === 0 && (await runCli(['is-leader', '--lock', 'nightly-report'], { env })).code === 0, 20_000, 100);
      const leading = sh();
      assert.equal(leading.status, 0, leading.stderr);
      assert.equal(readFileSync(dir.join('php.log'), 'utf8'), 'janitor.php\n');
      const status = JSON.parse(leading.stdout) as unknown;
      assert.match(JSON.stringify(status), /nightly-report/);
      janitor.signal('SIGTERM');
      await janitor.waitForExit(15_000);
      const standby = sh();
      assert.equal(standby.status, 0, standby.stderr);
      assert.equal(readFileSync(dir.join('php.log'), 'utf8'), 'janitor.php\n', 'not the leader: the app did not run');
    } finally {
      await janitor.kill();
      await report.kill();
    }
  });
});
