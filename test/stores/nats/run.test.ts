// Three real `baton run` processes against a real nats-server with JetStream (needs the build:
// bin/baton.js), and the CLI's exit codes for a bad nats URL (78) and an unreachable server (69).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { runThreeCandidateScenario } from '../../harness/run-scenario.js';
import { TempDir, cleanEnv, lines, runCli } from '../../harness/cli.js';
import { NatsServer, freePort } from '../../../infra/servers/index.js';

const server = await new NatsServer().start();
after(() => server.stop());

test('nats: three candidates under baton run: SIGKILL fails over after the lease, SIGTERM hands over at once', async () => {
  const r = await runThreeCandidateScenario({ storeUrl: server.url, name: 'nats' });
  assert.deepEqual([...r.terms].sort((a, b) => a - b), r.terms);
  assert.equal(new Set(r.terms).size, r.terms.length, 'every leadership has its own term');
  process.stdout.write(`# nats scenario: crash failover ${r.crashFailoverMs.toFixed(0)} ms, graceful handover ${r.gracefulHandoverMs.toFixed(0)} ms\n`);
});

test('nats: a bad URL exits 78 and an unreachable server 69, each with one line and no stack', async () => {
  const dir = new TempDir();
  try {
    const env = cleanEnv(dir.path);
    const cases: [string, number, RegExp][] = [
      [`${server.url}?bucket=no.dots`, 78, /bucket "no\.dots"/],
      [`${server.url}?color=red`, 78, /unknown URL option "color"/],
      [`nats://127.0.0.1:${await freePort()}?timeout=500ms`, 69, /nats:.*127\.0\.0\.1/],
    ];
    for (const [url, code, names] of cases) {
      const r = await runCli(['is-leader', '--store', url, '--lock', 'job'], { env });
      const err = lines(r.stderr);
      assert.equal(err.length, 1, `one line for ${url}, got:\n${r.stderr}`);
      assert.match(err[0]!, /^baton: /);
      assert.match(err[0]!, names);
      assert.doesNotMatch(r.stderr, /^\s*at /m);
      assert.equal(r.code, code, `exit code for ${url}: ${err[0]}`);
    }
  } finally {
    dir.remove();
  }
});
