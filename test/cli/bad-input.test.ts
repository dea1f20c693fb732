/**
 * The bad-input corpus: every way we know to hand `baton` something it cannot use. Each case
 * asserts the exact exit code (64 usage, 69 store unavailable, 78 configuration) and that
 * stderr is exactly one line, starting with `baton:`, naming the bad input — never a stack.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { join } from 'node:path';
import { parseStoreUrl } from '../../src/stores/registry.js';
import { ROOT, TempDir, cleanEnv, lines, runCli, waitFor } from '../harness/cli.js';
import { freePort } from '../../infra/servers/index.js';

const dir = new TempDir();
const store = dir.sqlite('bad.db');
const aFile = dir.join('a-file');
writeFileSync(aFile, 'not a directory\n');
const lockedDb = dir.join('locked.db');
const env = cleanEnv(dir.path);

interface Case {
  name: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  code: 64 | 69 | 78;
  /** What the one line must name. */
  names: RegExp;
  todo?: string;
  skip?: string;
}

const usage = (name: string, args: string[], names: RegExp): Case => ({ name, args, code: 64, names });
const config = (name: string, args: string[], names: RegExp, extraEnv?: NodeJS.ProcessEnv): Case => ({ name, args, code: 78, names, env: extraEnv });
const run = (...flags: string[]) => ['run', '--store', store, '--lock', 'job', ...flags, '--', 'true'];

const CASES: Case[] = [
  // 64: the command line cannot be understood.
  usage('unknown flag', ['run', '--bogus', '--store', store, '--lock', 'job', '--', 'true'], /unknown option '--bogus'/),
  usage('unknown command', ['frobnicate'], /unknown command 'frobnicate'/),
  usage('unknown flag of status', ['status', '--frob'], /unknown option '--frob'/),
  usage('unknown flag of demo', ['demo', '--bogus'], /unknown option '--bogus'/),
  usage('run without --lock', ['run', '--store', store, '--', 'true'], /--lock/),
  usage('release without --lock', ['release', '--store', store], /--lock/),
  usage('is-leader without --lock', ['is-leader', '--store', store], /--lock/),
  usage('run without a command', ['run', '--store', store, '--lock', 'job'], /command/),
  usage('run with nothing after --', ['run', '--store', store, '--lock', 'job', '--'], /command/),
  usage('a flag without its value', ['run', '--store', store, '--lock', 'job', '--lease-duration'], /--lease-duration/),

  // 78: a value that cannot be used.
  config('--lease-duration banana', run('--lease-duration', 'banana'), /--lease-duration.*"banana"/),
  config('--lease-duration without a unit', run('--lease-duration', '15'), /--lease-duration.*"15"/),
  config('renew deadline equal to the lease', run('--lease-duration', '2s', '--renew-deadline', '2s'), /--lease-duration.*--renew-deadline/),
  config('renew deadline longer than the lease', run('--lease-duration', '1s', '--renew-deadline', '1500ms'), /--lease-duration \(1000ms\).*--renew-deadline \(1500ms\)/),
  config('retry period × jitter ≥ renew deadline', run('--lease-duration', '2s', '--renew-deadline', '1s', '--retry-period', '900ms'), /--renew-deadline.*--retry-period.*900ms/),
  config('zero lease duration', run('--lease-duration', '0s'), /--lease-duration.*got 0/),
  config('zero retry period', run('--retry-period', '0ms'), /--retry-period.*got 0/),
  config('negative renew deadline', run('--renew-deadline', '-1s'), /--renew-deadline.*"-1s"/),
  config('lease duration over 24h', run('--lease-duration', '25h'), /--lease-duration.*24h/),
  config('retry period over 24h', run('--retry-period', '2d'), /--retry-period.*24h/),
  config('--timeout of run is not a duration', run('--timeout', 'soon'), /--timeout.*"soon"/),
  config('unknown store scheme', ['run', '--store', 'foo:bar', '--lock', 'job', '--', 'true'], /scheme "foo:"/),
  config('store that is not a URL', ['run', '--store', 'nourl', '--lock', 'job', '--', 'true'], /"nourl" is not a store URL/),
  config('malformed store URL', ['run', '--store', '://x', '--lock', 'job', '--', 'true'], /"::?\/\/x" is not a store URL/),
  config('sqlite URL without a path', ['status', '--store', 'sqlite:', '--lock', 'job'], /sqlite: needs a file path/),
  config('sqlite path under a regular file', ['status', '--store', `sqlite:${aFile}/x.db`, '--lock', 'job'], new RegExp(`${aFile}/x\\.db`)),
  config('sqlite path in /proc', ['run', '--store', 'sqlite:/proc/baton-test.db', '--lock', 'job', '--', 'true'], /\/proc\/baton-test\.db/),
  config('empty lock name', run().map((a) => (a === 'job' ? '' : a)), /--lock.*empty/),
  config('lock name of 201 characters', run().map((a) => (a === 'job' ? 'x'.repeat(201) : a)), /--lock: name is 201 characters; the limit is 200/),
  config('lock name with a space', run().map((a) => (a === 'job' ? 'a b' : a)), /--lock: "a b"/),
  config('lock name starting with punctuation', run().map((a) => (a === 'job' ? '.hidden' : a)), /--lock: "\.hidden"/),
  config('bad lock name from BATON_LOCK', ['run', '--store', store, '--', 'true'], /--lock: "a b"/, { BATON_LOCK: 'a b' }),
  config('bad store from BATON_STORE', ['status'], /scheme "foo:"/, { BATON_STORE: 'foo:bar' }),
  config('identity with a space', run('--identity', 'a b'), /identity: "a b"/),
  config('identity of 201 characters', run('--identity', 'i'.repeat(201)), /identity: "i{201}"/),
  config('status --lock \'\'', ['status', '--store', store, '--lock', ''], /--lock.*empty/),
  config('release --timeout x', ['release', '--store', store, '--lock', 'job', '--timeout', 'x'], /--timeout: "x"/),
  config('release --identity with a space', ['release', '--store', store, '--lock', 'job', '--identity', 'x y'], /identity: "x y"/),
  config('is-leader --identity \'\'', ['is-leader', '--store', store, '--lock', 'job', '--identity', ''], /identity: ""/),

  // 69: a valid store that cannot be reached now.
  {
    name: 'is-leader against a valid but locked (unreachable) sqlite store',
    args: ['is-leader', '--store', `sqlite:${lockedDb}`, '--lock', 'job'],
    code: 69,
    names: new RegExp(`${lockedDb}.*locked`),
  },
];

// Network stores on a loopback port where nothing listens, once their schemes are in this build.
const closedPort = await freePort();
for (const url of [`postgres://postgres@127.0.0.1:${closedPort}/postgres`, `redis://127.0.0.1:${closedPort}`, `etcd://127.0.0.1:${closedPort}`]) {
  const scheme = url.slice(0, url.indexOf(':'));
  let skip: string | undefined;
  try {
    parseStoreUrl(url);
  } catch {
    skip = `the ${scheme}: store is not in this build yet`;
  }
  CASES.push({ name: `is-leader against ${scheme} on a closed port`, args: ['is-leader', '--store', url, '--lock', 'job'], code: 69, names: new RegExp(`${scheme}|127\\.0\\.0\\.1`), skip });
}

// Another process holds an exclusive lock on this database for the whole suite.
let locker: ReturnType<typeof spawn> | undefined;
before(async () => {
  const hold = `const { openDatabase } = await import(${JSON.stringify(join(ROOT, 'dist/stores/sqlite/driver.js'))}); const db = openDatabase(${JSON.stringify(lockedDb)}, 1000);
    db.exec('CREATE TABLE IF NOT EXISTS t (x)'); db.exec('BEGIN EXCLUSIVE'); db.exec('INSERT INTO t VALUES (1)');
    console.log('locked'); setInterval(() => {}, 1 << 30);`;
  locker = spawn(process.execPath, ['--input-type=module', '--no-warnings', '-e', hold], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  locker.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  await waitFor('the locker to hold its lock', () => out.includes('locked'), 10_000);
});
after(() => {
  locker?.kill('SIGKILL');
  dir.remove();
});

describe('bad input: one line, the right exit code, no stack', { concurrency: 4 }, () => {
  assert.ok(CASES.length >= 25);
  for (const c of CASES) {
    test(c.name, { todo: c.todo, skip: c.skip }, async () => {
      const r = await runCli(c.args, { env: { ...env, ...c.env } });
      const err = lines(r.stderr);
      assert.equal(err.length, 1, `stderr must be exactly one line, got:\n${r.stderr}`);
      assert.match(err[0]!, /^baton: /);
      assert.match(err[0]!, c.names);
      assert.doesNotMatch(r.stderr, /^\s*at /m);
      assert.equal(r.stdout, '');
      assert.equal(r.code, c.code, `exit code for: ${err[0]}`);
    });
  }
});
