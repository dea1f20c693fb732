import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { TempDir, cleanEnv, lines, runCli } from '../../harness/cli.js';
import { ZooKeeperServer, freePort } from '../../../infra/servers/index.js';

// The CLI against zk:// URLs: a bad URL is a config error (78), an ensemble nobody answers at
// is "store unavailable" (69), each as one line; a real server works (0). Needs the build.
const server = await new ZooKeeperServer().start();
const dir = new TempDir();
after(async () => {
  dir.remove();
  await server.stop();
});

test('zookeeper via the CLI: bad URL → 78, unreachable → 69, one line each; a live server → 0', async () => {
  const env = cleanEnv(dir.path);
  const closed = await freePort();
  const cases: [string, number, RegExp][] = [
    ['zk://', 78, /names no host/],
    ['zk://127.0.0.1:99999/x', 78, /port "99999"/],
    ['zk://127.0.0.1:2181/zookeeper/x', 78, /reserved/],
    ['zk://127.0.0.1:2181/a//b', 78, /empty/],
    ['zk://127.0.0.1:2181/x?sessionTimeout=1s', 78, /unknown URL option "sessionTimeout"/],
    [`zk://127.0.0.1:${closed}/x?timeout=500ms`, 69, /zookeeper: .*connecting to 127\.0\.0\.1:\d+/],
  ];
  for (const [url, code, names] of cases) {
    const r = await runCli(['status', '--store', url, '--lock', 'x'], { env });
    assert.equal(r.code, code, `${url}: ${r.stderr}`);
    assert.equal(lines(r.stderr).length, 1, r.stderr);
    assert.match(r.stderr, /^baton: /);
    assert.match(r.stderr, names);
  }
  const ok = await runCli(['status', '--store', server.url('/cli'), '--lock', 'x', '--json'], { env });
  assert.equal(ok.code, 0, ok.stderr);
});
