/**
 * The CLI on dynamodb:// URLs: bad URLs, a table of the wrong shape, a missing region or
 * credentials are one line and exit 78; an endpoint where nothing listens is one line and exit 69.
 * Needs the build (bin/baton.js).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { TempDir, cleanEnv, lines, runCli } from '../../harness/cli.js';
import { freePort } from '../../../infra/servers/index.js';
import { startDynalite } from './servers.js';

const server = await startDynalite();
const dir = new TempDir();
after(() => dir.remove());
const env = cleanEnv(dir.path);
const closedPort = await freePort();

// A table keyed on "id", not "pk".
const client = new DynamoDBClient({ endpoint: server.endpoint, region: 'us-east-1' });
await client.send(
  new CreateTableCommand({
    TableName: 'other-shape',
    AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
    BillingMode: 'PAY_PER_REQUEST',
  }),
);
client.destroy();
await new Promise((r) => setTimeout(r, 300)); // dynalite turns tables ACTIVE after 50 ms

const at = (table: string, extra = '') => `dynamodb://${table}?endpoint=${encodeURIComponent(server.endpoint)}${extra}`;
const without = (...names: string[]) => Object.fromEntries(names.map((n) => [n, undefined]));

interface Case {
  name: string;
  url: string;
  code: 69 | 78;
  names: RegExp;
  env?: NodeJS.ProcessEnv;
}

const CASES: Case[] = [
  { name: 'unknown URL option', url: 'dynamodb://leases?consistent=no', code: 78, names: /unknown URL option "consistent"/ },
  { name: 'table name too short', url: 'dynamodb://ab', code: 78, names: /table name "ab"/ },
  { name: 'endpoint not http', url: 'dynamodb://leases?endpoint=ftp%3A%2F%2Fx', code: 78, names: /endpoint "ftp:\/\/x"/ },
  { name: 'table with another key schema', url: at('other-shape', '&region=us-east-1'), code: 78, names: /table "other-shape" has another key schema: baton needs partition key "pk"/ },
  { name: 'no region anywhere', url: at('leases'), code: 78, names: /no AWS region: set AWS_REGION or add \?region=/, env: without('AWS_REGION', 'AWS_DEFAULT_REGION') },
  {
    name: 'no credentials anywhere',
    url: at('leases', '&region=us-east-1'),
    code: 78,
    names: /dynamodb: table "leases": .*credentials/i,
    env: without('AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN'),
  },
  { name: 'nothing listening at the endpoint', url: `dynamodb://leases?endpoint=http%3A%2F%2F127.0.0.1%3A${closedPort}&region=us-east-1&timeout=500`, code: 69, names: /dynamodb: table "leases"/ },
];

describe('dynamodb CLI: one line, the right exit code, no stack', { concurrency: 4 }, () => {
  for (const c of CASES) {
    test(c.name, async () => {
      const r = await runCli(['is-leader', '--store', c.url, '--lock', 'job'], { env: { ...env, ...c.env } });
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
