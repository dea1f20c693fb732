/**
 * The CLI on bad azblob configurations: one line on stderr, no stack trace, sysexits codes —
 * 78 for a URL or credentials that cannot work, 69 for a store that does not answer.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { TempDir, cleanEnv, runCli } from '../../harness/cli.js';
import { AzuriteServer, freePort } from '../../../infra/servers/index.js';

const server = await new AzuriteServer().start();
const dir = new TempDir();
after(async () => {
  dir.remove();
  await server.stop();
});

function assertOneLine(stderr: string, pattern: RegExp): void {
  const lines = stderr.trim().split('\n');
  assert.equal(lines.length, 1, stderr);
  assert.match(lines[0]!, pattern);
  assert.doesNotMatch(stderr, /\n\s+at /, 'no stack trace');
}

test('azblob CLI: no connection string is a config error (78)', async () => {
  const env = cleanEnv(dir.path);
  delete env.AZURE_STORAGE_CONNECTION_STRING;
  const r = await runCli(['status', '--store', 'azblob://leases', '--lock', 'x'], { env });
  assert.equal(r.code, 78, r.stderr);
  assertOneLine(r.stderr, /azblob: azblob:\/\/leases needs AZURE_STORAGE_CONNECTION_STRING/);
});

test('azblob CLI: a bad container name and refused credentials are config errors (78)', async () => {
  const env = cleanEnv(dir.path, { AZURE_STORAGE_CONNECTION_STRING: server.connectionString });
  const bad = await runCli(['status', '--store', 'azblob://Bad_Name', '--lock', 'x'], { env });
  assert.equal(bad.code, 78, bad.stderr);
  assertOneLine(bad.stderr, /container "Bad_Name"/);
  const wrongKey = server.connectionString.replace(/AccountKey=[^;]+/, `AccountKey=${Buffer.from('wrong').toString('base64')}`);
  const refused = await runCli(['status', '--store', 'azblob://leases', '--lock', 'x'], { env: { ...env, AZURE_STORAGE_CONNECTION_STRING: wrongKey } });
  assert.equal(refused.code, 78, refused.stderr);
  assertOneLine(refused.stderr, /credentials refused/);
});

test('azblob CLI: nothing listening is store unavailable (69); a running azurite answers (0)', async () => {
  const dead = server.connectionString.replace(/127\.0\.0\.1:\d+/, `127.0.0.1:${await freePort()}`);
  const env = cleanEnv(dir.path, { AZURE_STORAGE_CONNECTION_STRING: dead });
  const r = await runCli(['status', '--store', 'azblob://leases?timeout=1s', '--lock', 'x'], { env });
  assert.equal(r.code, 69, r.stderr);
  assertOneLine(r.stderr, /azblob: container "leases" at http:\/\/127\.0\.0\.1:\d+\/devstoreaccount1\/leases: /);
  const ok = await runCli(['status', '--store', 'azblob://leases', '--lock', 'x', '--json'], { env: { ...env, AZURE_STORAGE_CONNECTION_STRING: server.connectionString } });
  assert.equal(ok.code, 0, ok.stderr);
});
