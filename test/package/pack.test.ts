/**
 * The package as a user gets it: `npm pack`, then a fresh project installs the tarball with
 * the Node line running this test and uses it the way the README says — `npx baton --version`,
 * `npx baton demo`, an ESM consumer of the library, of `<name>/testing`, `<name>/node-cron`
 * and `<name>/otel`, a TypeScript consumer type-checked against the shipped declarations,
 * every TypeScript block of the README and docs/ that imports the package type-checked against
 * them too, and a store whose optional SDK is not
 * installed (one line naming the npm install, exit 78 — not a crash).
 *
 * On a Node line without `node:sqlite` (Node 20) the project also installs better-sqlite3, as
 * the README tells such users to. Installs use npm's cache; a package missing from it comes
 * from the registry.
 */
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ROOT } from '../harness/cli.js';
import { docBlocks, docFiles, tsContext } from '../harness/doc-blocks.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
const NODE = process.execPath;
const NODE_BIN = dirname(NODE);
const hasBuiltinSqlite = (() => {
  const get = (process as { getBuiltinModule?: (id: string) => unknown }).getBuiltinModule;
  try {
    return !!get?.('node:sqlite');
  } catch {
    return false;
  }
})();

/** npmCli finds npm's own script, run with the Node under test (so installs build for its ABI). */
function npmCli(): string {
  const candidates = [join(NODE_BIN, '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js'), '/usr/lib/node_modules/npm/bin/npm-cli.js', '/usr/local/lib/node_modules/npm/bin/npm-cli.js'];
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`npm-cli.js not found (looked in ${candidates.join(', ')})`);
  return found;
}

const work = mkdtempSync(join(tmpdir(), 'baton-pack-'));
const project = join(work, 'app');
/** Environment of every command: the Node under test first on PATH, no BATON_* from the machine. */
const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('BATON_') && !k.startsWith('npm_')));
env.PATH = `${NODE_BIN}:${process.env.PATH}`;
// HOME stays: npm reads its settings (e.g. nodedir for native builds without a download) from ~/.npmrc.
env.XDG_STATE_HOME = join(work, 'state');
env.npm_config_cache = process.env.npm_config_cache ?? join(process.env.HOME ?? '/root', '.npm');
env.npm_config_update_notifier = 'false';

function run(cmd: string, args: string[], cwd = project, timeoutMs = 300_000): SpawnSyncReturns<string> {
  return spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout: timeoutMs });
}
function npm(args: string[], cwd = project): SpawnSyncReturns<string> {
  return run(NODE, [npmCli(), ...args, '--no-audit', '--no-fund', '--prefer-offline'], cwd);
}
function ok(r: SpawnSyncReturns<string>, what: string): string {
  assert.equal(r.status, 0, `${what} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`.slice(0, 4000));
  return r.stdout;
}

let installMs = 0;
before(() => {
  // --ignore-scripts: the test command has built dist/ already; npm's `prepare` would build it
  // again in place while other test files run the CLI from it (a CI run once failed on a
  // half-written dist/core/duration.js, 27 Nov).
  const packed = ok(npm(['pack', '--ignore-scripts', '--pack-destination', work, '--silent'], ROOT), 'npm pack').trim().split('\n').pop()!;
  const tarball = join(work, packed);
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2));
  // @types/node: any TypeScript project on Node has it (the declarations name node:events, NodeJS…).
  const extra = ['@types/node@20', ...(hasBuiltinSqlite ? [] : ['better-sqlite3'])];
  const t0 = Date.now();
  ok(npm(['install', tarball, ...extra]), `npm install ${packed} ${extra.join(' ')}`);
  installMs = Date.now() - t0;
});
after(() => rmSync(work, { recursive: true, force: true }));

describe(`the packed ${pkg.name} on Node ${process.versions.node}`, () => {
  test('ships the build, not the tests', () => {
    const installed = join(project, 'node_modules', ...pkg.name.split('/'));
    assert.ok(existsSync(join(installed, 'dist', 'index.js')), 'dist/index.js is in the package');
    assert.ok(existsSync(join(installed, 'bin', 'baton.js')), 'bin/baton.js is in the package');
    assert.ok(!existsSync(join(installed, 'test')), 'no test/ folder in the package');
    assert.ok(!readdirSync(installed).includes('node_modules'));
    console.log(`# install took ${installMs} ms (${hasBuiltinSqlite ? 'node:sqlite, no native build' : 'with better-sqlite3 built from source'})`);
  });

  test('npx baton --version prints the package version', () => {
    const out = ok(run(NODE, [join(project, 'node_modules', '.bin', 'baton'), '--version']), 'baton --version');
    assert.match(out.trim(), new RegExp(`^(baton )?${pkg.version.replace(/\./g, '\\.')}$`));
  });

  test("the README's install block: npm install (here the tarball), then npx baton demo runs the tour to the end", () => {
    const readme = docBlocks(ROOT, 'README.md').find((b) => b.comments.includes('readme-test: install'));
    assert.ok(readme, 'README has no block marked readme-test: install');
    const [install, demo] = readme.code.split('\n').map((l) => l.replace(/#.*$/, '').trim().split(/\s+/));
    // before() ran the first line with the packed tarball in place of the published name.
    assert.deepEqual(install, ['npm', 'install', pkg.name]);
    assert.deepEqual(demo!.slice(0, 1), ['npx']);
    const r = run(NODE, [npmCli(), 'exec', '--', ...demo!.slice(1)], project, 120_000);
    const out = ok(r, 'npx baton demo');
    assert.match(out, /crash failover/);
    assert.match(out, /terms: 1 → 2 → 3/);
    assert.doesNotMatch(r.stderr, /ExperimentalWarning/);
  });

  test('an ESM consumer of the library, of /testing, /node-cron and /otel', () => {
    writeFileSync(
      join(project, 'consumer.mjs'),
      `import { LeaderElector, openStore, parseDuration } from '${pkg.name}';
import { FakeClock, storeConformanceSuite } from '${pkg.name}/testing';
import { runCoordinator } from '${pkg.name}/node-cron';
if (typeof storeConformanceSuite !== 'function' || typeof FakeClock !== 'function') throw new Error('testing exports missing');
// The node-cron adapter loads without node-cron installed: node-cron calls it, not the other way.
if (typeof runCoordinator({ store: 'memory:consumer' }).shouldRun !== 'function') throw new Error('node-cron export missing');
// /otel on the global (no-op) OpenTelemetry provider: @opentelemetry/api comes with prom-client.
const { instrumentElectorOtel } = await import('${pkg.name}/otel');
const otelElector = new LeaderElector({ store: await openStore('memory:otel'), lock: 'otel' });
const telemetry = await instrumentElectorOtel(otelElector, { store: 'memory:otel' });
telemetry.close();
const store = await openStore('memory:consumer');
const elector = new LeaderElector({ store, lock: 'consumer', leaseDurationMs: 1000, renewDeadlineMs: 600, retryPeriodMs: 200 });
const { term } = await new Promise((resolve) => { elector.once('elected', resolve); elector.start(); });
await elector.stop();
await store.close();
console.log('elected with term', term, 'lease', parseDuration('2s'));
`,
    );
    assert.match(ok(run(NODE, ['consumer.mjs']), 'node consumer.mjs'), /elected with term 1 lease 2000/);
  });

  test('a TypeScript consumer type-checks against the shipped declarations', () => {
    writeFileSync(
      join(project, 'consumer.ts'),
      `import { LeaderElector, openStore, type LeaseStore, type StopReason } from '${pkg.name}';
import { storeConformanceSuite, type ConformanceOptions } from '${pkg.name}/testing';
const options: ConformanceOptions = { name: 'x', makeStore: () => openStore('memory:') };
const reason: StopReason = 'stopped';
export async function main(store: LeaseStore): Promise<number> {
  const e = new LeaderElector({ store, lock: 'ts' });
  void storeConformanceSuite; void options; void reason;
  return e.isLeader() ? 1 : 0;
}
// @ts-expect-error: a misspelt option is a type error for a TypeScript user
new LeaderElector({ store: await openStore('memory:'), lock: 'ts', leaseDuration: 5 });
`,
    );
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: false, types: ['node'] }, files: ['consumer.ts'] }),
    );
    // The repository's own TypeScript compiler, run on the consumer project.
    ok(run(NODE, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json']), 'tsc on the consumer');
  });

  test('every TypeScript block in README.md and docs/ that imports the package type-checks against it', () => {
    const imports = new RegExp(`from '${pkg.name}(/[^']*)?'`);
    const blocks = docFiles(ROOT)
      .flatMap((f) => docBlocks(ROOT, f))
      .filter((b) => (b.lang === 'ts' || b.lang === 'typescript') && imports.test(b.code));
    assert.ok(blocks.length >= 15, `found only ${blocks.length} blocks`);
    const dir = join(project, 'doc-blocks');
    mkdirSync(dir, { recursive: true });
    const sdks = new Set<string>();
    const files = blocks.map((b) => {
      const name = `${b.file.replace(/\W+/g, '-')}-${b.line}.ts`;
      // The block first, so a compiler error's line is the block's line; the reader's own code after it.
      writeFileSync(join(dir, name), `${b.code}\n${tsContext(b)}\n`);
      for (const m of b.code.matchAll(/from '([^'.][^']*)'/g)) {
        const spec = m[1]!;
        if (spec.startsWith('node:') || spec === pkg.name || spec.startsWith(`${pkg.name}/`)) continue;
        sdks.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
      }
      return { name, block: b };
    });
    // A store's SDK comes as the reader installs it; here it is the repository's copy (a link, as
    // npm link makes), with its @types package where it has one — removed again afterwards, since
    // the tests below need the SDKs missing.
    const links: string[] = [];
    for (const sdk of sdks) {
      for (const name of [sdk, `@types/${sdk.replace(/^@/, '').replace('/', '__')}`]) {
        const from = join(ROOT, 'node_modules', name);
        const to = join(project, 'node_modules', name);
        if (!existsSync(from) || existsSync(to)) continue;
        mkdirSync(dirname(to), { recursive: true });
        symlinkSync(from, to);
        links.push(to);
      }
    }
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] }, files: files.map((f) => f.name) }),
    );
    let r: SpawnSyncReturns<string>;
    try {
      r = run(NODE, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json', '--pretty', 'false'], dir);
    } finally {
      for (const link of links) rmSync(link);
    }
    // Errors point at the Markdown: FILE.ts(L,C) → docs/x.md:(fence line + L).
    const where = (r.stdout + r.stderr).replace(/^(\S+\.ts)\((\d+),(\d+)\)/gm, (all, f: string, l: string) => {
      const hit = files.find((x) => x.name === f);
      return hit ? `${hit.block.file}:${hit.block.line + Number(l)}` : all;
    });
    assert.equal(r.status, 0, `doc blocks do not type-check:\n${where}`.slice(0, 6000));
    console.log(`# ${blocks.length} doc blocks type-checked: ${blocks.map((b) => `${b.file}:${b.line}`).join(' ')}`);
  });

  test('a store whose optional SDK is missing: one line naming the npm install, exit 78', () => {
    const r = run(NODE, [join(project, 'node_modules', '.bin', 'baton'), 'status', '--store', 'postgres://127.0.0.1:1/db']);
    assert.equal(r.status, 78, r.stderr);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, /npm install pg/);
  });

  test('the DynamoDB store without its SDK: one line naming the npm install, exit 78', () => {
    const r = run(NODE, [join(project, 'node_modules', '.bin', 'baton'), 'status', '--store', 'dynamodb://leases?region=us-east-1&endpoint=http%3A%2F%2F127.0.0.1%3A1']);
    assert.equal(r.status, 78, r.stderr);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, /npm install @aws-sdk\/client-dynamodb/);
  });

  test('the azblob store without @azure/storage-blob: one line naming the npm install, exit 78', () => {
    const r = spawnSync(NODE, [join(project, 'node_modules', '.bin', 'baton'), 'status', '--store', 'azblob://leases'], {
      cwd: project,
      env: { ...env, AZURE_STORAGE_CONNECTION_STRING: 'UseDevelopmentStorage=true' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 78, r.stderr);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, /npm install @azure\/storage-blob@12\.32\.0/);
  });
});
