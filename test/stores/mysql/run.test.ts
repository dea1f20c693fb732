// Three real `baton run` processes against a private MariaDB (needs the build: bin/baton.js),
// and the CLI's exit codes for a bad mysql URL (78) and an unreachable server (69).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { runThreeCandidateScenario } from '../../harness/run-scenario.js';
import { TempDir, cleanEnv, lines, runCli } from '../../harness/cli.js';
import { MariaDBServer, freePort } from '../../../infra/servers/index.js';

const server = await new MariaDBServer().start();
after(() => server.stop());

test('mysql: three candidates under baton run: SIGKILL fails over after the lease, SIGTERM hands over at once', async () => {
  const r = await runThreeCandidateScenario({ storeUrl: server.url, name: 'mysql' });
  assert.deepEqual([...r.terms].sort((a, b) => a - b), r.terms);
  assert.equal(new Set(r.terms).size, r.terms.length, 'every leadership has its own term');
  process.stdout.write(`# mysql scenario: crash failover ${r.crashFailoverMs.toFixed(0)} ms, graceful handover ${r.gracefulHandoverMs.toFixed(0)} ms\n`);
});

test('mysql: a bad URL exits 78 and an unreachable server 69, each with one line and no stack', async () => {
  const dir = new TempDir();
  try {
    const env = cleanEnv(dir.path);
    const cases: [string, number, RegExp][] = [
      [`${server.url}?table=no-dashes`, 78, /table "no-dashes"/],
      [`mysql://baton:baton@127.0.0.1:${server.port}`, 78, /names no database/],
      [`mysql://baton:secret@127.0.0.1:${await freePort()}/baton?timeout=500ms`, 69, /mysql:.*127\.0\.0\.1/],
    ];
    for (const [url, code, names] of cases) {
      const r = await runCli(['is-leader', '--store', url, '--lock', 'job'], { env });
      const err = lines(r.stderr);
      assert.equal(err.length, 1, `one line for ${url}, got:\n${r.stderr}`);
      assert.match(err[0]!, /^baton: /);
      assert.match(err[0]!, names);
      assert.doesNotMatch(r.stderr, /secret/);
      assert.doesNotMatch(r.stderr, /^\s*at /m);
      assert.equal(r.code, code, `exit code for ${url}: ${err[0]}`);
    }
  } finally {
    dir.remove();
  }
});
