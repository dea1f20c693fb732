/**
 * The bad-input corpus: every way we know to hand `baton` something it cannot use. Each case
 * asserts the exact exit code (64 usage, 69 store unavailable, 78 configuration), that
 * stderr is exactly one line, starting with `baton:`, naming the bad input — never a stack —
 * and that the directory the stores would live in is left exactly as it was: no database, no
 * -wal/-shm, no parent directory created on an error path.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
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
/** A store nothing has used yet, in a directory that does not exist yet. */
const fresh = dir.sqlite('new/fresh.db');
const foreignDb = dir.join('foreign.db');
const long = 'p'.repeat(100_000);

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
  usage('handover without --lock', ['handover', '--store', store, '--to', 'b'], /--lock/),
  usage('handover without --to', ['handover', '--store', store, '--lock', 'job'], /missing --to ID/),

  // 78: a value that cannot be used.
  config('--lease-duration banana', run('--lease-duration', 'banana'), /--lease-duration.*"banana"/),
  config('--lease-duration without a unit', run('--lease-duration', '15'), /--lease-duration.*"15"/),
  config('renew deadline equal to the lease', run('--lease-duration', '2s', '--renew-deadline', '2s'), /--lease-duration.*--renew-deadline/),
  config('renew deadline longer than the lease', run('--lease-duration', '1s', '--renew-deadline', '1500ms'), /--lease-duration \(1s\).*--renew-deadline \(1500ms\)/),
  config('retry period × jitter ≥ renew deadline', run('--lease-duration', '2s', '--renew-deadline', '1s', '--retry-period', '900ms'), /--renew-deadline.*--retry-period.*900ms/),
  config("zero lease duration", run("--lease-duration", "0s"), /--lease-duration: "0s" is below the minimum of 100ms/),
  config("zero retry period", run("--retry-period", "0ms"), /--retry-period: "0ms" is below the minimum of 10ms/),
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
  config('identity of 201 characters', run('--identity', 'i'.repeat(201)), /identity: "i{69}…\[103 more characters\]…i{29}" must be 1–200/),
  config('status --lock \'\'', ['status', '--store', store, '--lock', ''], /--lock.*empty/),
  config('release --timeout x', ['release', '--store', store, '--lock', 'job', '--timeout', 'x'], /--timeout: "x"/),
  config('release --identity with a space', ['release', '--store', store, '--lock', 'job', '--identity', 'x y'], /identity: "x y"/),
  config('is-leader --identity \'\'', ['is-leader', '--store', store, '--lock', 'job', '--identity', ''], /identity: ""/),
  config('handover --to with a space', ['handover', '--store', store, '--lock', 'job', '--to', 'a b'], /--to: "a b"/),
  config('handover --from \'\'', ['handover', '--store', store, '--lock', 'job', '--to', 'b', '--from', ''], /--from: ""/),
  config('handover --timeout x', ['handover', '--store', store, '--lock', 'job', '--to', 'b', '--timeout', 'x'], /--timeout: "x"/),
  // The candidate-registry flags (issue 27), checked before the store is opened.
  config('--app-version that is not semver, on a new store', ['run', '--store', fresh, '--lock', 'job', '--app-version', 'banana', '--', 'true'], /--app-version: "banana" is not a semantic version/),
  config('BATON_APP_VERSION that is not semver', ['cron', '--store', fresh, '--lock', 'job', '--schedule', '* * * * *', '--', 'true'], /--app-version: "1\.x" is not a semantic version/, { BATON_APP_VERSION: '1.x' }),
  config('--priority that is not an integer', ['serve', '--store', fresh, '--lock', 'job', '--priority', '1.5'], /--priority: "1\.5" is not an integer/),
  config('--label without =', ['run', '--store', fresh, '--lock', 'job', '--label', 'zone', '--', 'true'], /--label: "zone" is not NAME=VALUE/),
  config('BATON_LABELS with a bad entry', ['run', '--store', fresh, '--lock', 'job', '--', 'true'], /--label: "=x" is not NAME=VALUE/, { BATON_LABELS: 'zone=a,=x' }),
  config('--prefer that is not a rule', ['run', '--store', fresh, '--lock', 'job', '--prefer', 'best', '--', 'true'], /--prefer: "best" is not a rule; use newest, oldest, priority/),
  config('BATON_PREFER that is not a rule', ['serve', '--store', fresh, '--lock', 'job'], /--prefer: "fastest" is not a rule/, { BATON_PREFER: 'fastest' }),
  config('handover never creates a store', ['handover', '--store', fresh, '--lock', 'job', '--to', 'b'], /no store at .*new\/fresh\.db/),

  // Everything is checked before the store is opened: a new store is not created for a bad flag.
  config('a 3 ms lease, on a new store', ['run', '--store', fresh, '--lock', 'job', '--lease-duration', '3ms', '--', 'true'], /--lease-duration: "3ms" is below the minimum of 100ms \(.+\)/),
  config('a lease of 0.1ms is echoed as typed', ['run', '--store', fresh, '--lock', 'job', '--lease-duration', '0.1ms', '--', 'true'], /"0\.1ms" is below the minimum/),
  config('a retry period under 10ms', ['run', '--store', fresh, '--lock', 'job', '--retry-period', '5ms', '--', 'true'], /--retry-period: "5ms" is below the minimum of 10ms/),
  config('bad --timeout of cron, on a new store', ['cron', '--store', fresh, '--lock', 'job', '--schedule', '* * * * *', '--lease-duration', 'x', '--', 'true'], /--lease-duration: "x"/),
  config('bad identity of once, on a new store', ['once', '--store', fresh, '--key', 'k', '--identity', 'a b', '--', 'true'], /identity: "a b"/),
  config('bad durations of serve, on a new store', ['serve', '--store', fresh, '--lock', 'job', '--renew-deadline', '20s'], /--lease-duration \(15000ms, the default\).*--renew-deadline \(20s\)/),
  config('a bad duration with an unreachable store is 78 at once', ['run', '--store', 'postgres://baton@127.0.0.1:1/x', '--lock', 'job', '--lease-duration', 'soon', '--', 'true'], /--lease-duration: "soon"/),
  config('memory: is refused with the reason', ['run', '--store', 'memory:', '--lock', 'job', '--', 'true'], /"memory:" lives inside one process/),
  config('memory:NAME from BATON_STORE too', ['status'], /"memory:x" lives inside one process/, { BATON_STORE: 'memory:x' }),
  config('sqlite::memory: is refused too', ['run', '--store', 'sqlite::memory:', '--lock', 'job', '--', 'true'], /lives inside one process/),
  config('status never creates a store', ['status', '--store', fresh], /no store at .*new\/fresh\.db/),
  config('is-leader never creates a store', ['is-leader', '--store', fresh, '--lock', 'job'], /no store at .*new\/fresh\.db/),
  config('release never creates a store', ['release', '--store', fresh, '--lock', 'job'], /no store at .*new\/fresh\.db/),
  config('once --status never creates a store', ['once', '--store', fresh, '--key', 'k', '--status'], /no store at .*new\/fresh\.db/),
  config('the default store is not created by status', ['status'], /no store at .*state\/baton\/baton\.db/),
  config('an unknown sqlite URL option', ['run', '--store', `${fresh}?mode=ro`, '--lock', 'job', '--', 'true'], /sqlite: unknown URL option "mode"/),
  config('an unknown memory URL option', ['status', '--store', 'memory:x?shared=1'], /memory: unknown URL option "shared"/),
  config('an unknown postgres URL option', ['status', '--store', 'postgres://h/db?tabel=x'], /postgres: unknown URL option "tabel"/),
  config('an unknown redis URL option', ['status', '--store', 'redis://h:6379?prefx=x'], /redis: unknown URL option "prefx"/),
  config('an unknown etcd URL option', ['status', '--store', 'etcd://h:2379?prefx=x'], /unknown etcd URL parameter "prefx"/),
  config('an unknown k8s URL option', ['status', '--store', 'k8s://default?namespace=x'], /k8s: unknown URL option "namespace"/),
  config('postgres:// without a host', ['status', '--store', 'postgres://'], /postgres: "postgres:\/\/" names no host/),
  config('postgres:///db without a host', ['status', '--store', 'postgres:///db'], /names no host/),
  config('a table of our name that is not ours', ['status', '--store', `sqlite:${foreignDb}`], new RegExp(`${foreignDb}.*"baton_leases".*not baton's`)),
  config('a table that is not ours, for run', ['run', '--store', `sqlite:${foreignDb}`, '--lock', 'job', '--', 'true'], /"baton_leases" that is not baton's/),
  config('a lock name with a newline is escaped', run().map((a) => (a === 'job' ? 'a\nb' : a)), /--lock: "a\\nb"/),
  config('a 100 KB store path is shortened', ['status', '--store', `sqlite:/${long}/x.db`], /no store at \/p+…\[\d+ more characters\]…p+\/x\.db/),
  config('control characters in a store URL are escaped', ['status', '--store', 'nourl\x1b[31m'], /"nourl\\x1b\[31m" is not a store URL/),
  usage('baton help NOSUCH', ['help', 'nosuch'], /unknown command 'nosuch'/),
  usage('a near miss suggests the command', ['statuz'], /unknown command 'statuz' \(Did you mean status\?\)/),
  usage('once without a command suggests --key', ['once', '--store', fresh, '--key', 'k'], /e\.g\. baton once --key KEY -- /),

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
    console.log('locked'); setInterval(() => db, 1 << 30);`; // the timer keeps db (and its lock) from being collected
  locker = spawn(process.execPath, ['--input-type=module', '--no-warnings', '-e', hold], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  locker.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  await waitFor('the locker to hold its lock', () => out.includes('locked'), 10_000);
  // Someone else's database: a table named like ours, with other columns.
  const make = `const { openDatabase } = await import(${JSON.stringify(join(ROOT, 'dist/stores/sqlite/driver.js'))}); const db = openDatabase(${JSON.stringify(foreignDb)}, 1000);
    db.exec('CREATE TABLE baton_leases (id INTEGER PRIMARY KEY, name TEXT)'); db.close();`;
  const r = spawnSync(process.execPath, ['--input-type=module', '--no-warnings', '-e', make], { cwd: ROOT, stdio: 'inherit' });
  assert.equal(r.status, 0);
  baseline = listing();
});

let baseline: string[] = [];
/** listing is every path under the test directory (the locked database's journal excepted). */
function listing(): string[] {
  return (readdirSync(dir.path, { recursive: true }) as string[]).filter((p) => !p.startsWith('locked.db')).sort();
}
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
      assert.equal(err.length, 1, `stderr must be exactly one line (exit ${r.code}), got:\n${r.stderr}`);
      assert.match(err[0]!, /^baton: /);
      assert.match(err[0]!, c.names);
      assert.doesNotMatch(r.stderr, /^\s*at /m);
      assert.equal(r.stdout, '');
      assert.equal(r.code, c.code, `exit code for: ${err[0]}`);
      assert.ok(err[0]!.length < 700, 'the line is short');
      assert.deepEqual(listing(), baseline, 'nothing created or removed in the store directory');
    });
  }
});
