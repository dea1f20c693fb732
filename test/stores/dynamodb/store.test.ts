/**
 * The DynamoDB store's own behaviour against a real dynalite: its URL, the table it creates or
 * refuses, the items it keeps (term counter, random revisions), batch renewal, a client passed
 * in by a library user, the missing SDK and an unreachable endpoint.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CreateTableCommand, DescribeTableCommand, DescribeTimeToLiveCommand, DynamoDBClient, GetItemCommand, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { InvalidConfigError, StoreUnavailableError } from '../../../src/core/errors.js';
import { exitCodeFor } from '../../../src/cli/exit-codes.js';
import { freePort } from '../../../infra/servers/index.js';
import { parseStoreUrl } from '../../../src/stores/registry.js';
import { openDynamoStore, parseDynamoUrl } from '../../../src/stores/dynamodb/index.js';
import { loadDynamoSdk } from '../../../src/stores/dynamodb/sdk.js';
import { acquireWrite, keepWrite } from '../../../src/testing/conformance/context.js';
import { openOn, startDynalite } from './servers.js';

const server = await startDynalite();
const client = new DynamoDBClient({ endpoint: server.endpoint, region: 'us-east-1' });
after(() => client.destroy());

const configError = (pattern: RegExp) => (err: Error) => err instanceof InvalidConfigError && exitCodeFor(err) === 78 && pattern.test(err.message) && !err.message.includes('\n');

describe('dynamodb URL', () => {
  it('reads the table, endpoint, region, timeout and batch mode', () => {
    assert.deepEqual(parseDynamoUrl('dynamodb://leases'), { table: 'leases', timeoutMs: 5000 });
    assert.deepEqual(parseDynamoUrl('dynamodb://My_Table.v2?endpoint=http%3A%2F%2F127.0.0.1%3A8000&region=eu-west-1&timeout=800'), {
      table: 'My_Table.v2',
      endpoint: 'http://127.0.0.1:8000',
      region: 'eu-west-1',
      timeoutMs: 800,
    });
    assert.deepEqual(parseDynamoUrl('dynamodb://leases?batch=off'), { table: 'leases', timeoutMs: 5000, batch: 'off' });
    assert.deepEqual(parseDynamoUrl('dynamodb://leases?batch=transact'), { table: 'leases', timeoutMs: 5000, batch: 'transact' });
    assert.equal(parseStoreUrl('dynamodb://leases/').descriptor.name, 'dynamodb');
  });

  it('refuses unknown options and bad values with one line naming them', () => {
    assert.throws(() => parseDynamoUrl('dynamodb://leases?consistent=false'), configError(/unknown URL option "consistent".*endpoint, region, timeout/));
    assert.throws(() => parseDynamoUrl('dynamodb://ab'), configError(/table name "ab"/));
    assert.throws(() => parseDynamoUrl('dynamodb://a$b'), configError(/table name "a\$b"/));
    assert.throws(() => parseDynamoUrl('dynamodb://'), configError(/table name ""/));
    assert.throws(() => parseDynamoUrl('dynamodb://leases/extra'), configError(/not a dynamodb URL/));
    assert.throws(() => parseDynamoUrl('dynamodb://leases?endpoint=ftp://x'), configError(/endpoint "ftp:\/\/x"/));
    assert.throws(() => parseDynamoUrl('dynamodb://leases?endpoint=nope'), configError(/endpoint "nope"/));
    assert.throws(() => parseDynamoUrl('dynamodb://leases?region=Mars'), configError(/region "Mars"/));
    assert.throws(() => parseDynamoUrl('dynamodb://leases?timeout=5s'), configError(/timeout "5s"/));
    assert.throws(() => parseDynamoUrl('dynamodb://leases?batch=partiql'), configError(/batch "partiql" is not transact or off/));
  });
});

describe('dynamodb table', () => {
  it('creates a missing table: partition key pk (String), on-demand billing, no TTL', async () => {
    const store = await openOn(server, 'created-here');
    await store.close();
    const { Table } = await client.send(new DescribeTableCommand({ TableName: 'created-here' }));
    assert.deepEqual(Table?.KeySchema, [{ AttributeName: 'pk', KeyType: 'HASH' }]);
    assert.deepEqual(Table?.AttributeDefinitions, [{ AttributeName: 'pk', AttributeType: 'S' }]);
    assert.equal(Table?.BillingModeSummary?.BillingMode, 'PAY_PER_REQUEST');
    const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: 'created-here' }));
    assert.equal(ttl.TimeToLiveDescription?.TimeToLiveStatus, 'DISABLED');
  });

  it('refuses a table with another key schema (exit 78, naming the table and the schema it needs)', async () => {
    await client.send(
      new CreateTableCommand({
        TableName: 'wrong-schema',
        AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    await waitActive('wrong-schema');
    await assert.rejects(openOn(server, 'wrong-schema'), configError(/table "wrong-schema" has another key schema: baton needs partition key "pk" of type String/));
  });

  it('says which table and schema it needs when the credentials cannot create it (exit 78)', async () => {
    // dynalite has no IAM: this client answers CreateTable as DynamoDB does for a role without
    // dynamodb:CreateTable (AccessDeniedException); every other call goes to the real server.
    const denied = new DynamoDBClient({ endpoint: server.endpoint, region: 'us-east-1' });
    denied.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'CreateTableCommand') throw Object.assign(new Error('User is not authorized to perform: dynamodb:CreateTable'), { name: 'AccessDeniedException' });
        return next(args);
      },
      { step: 'initialize', name: 'denyCreateTable' },
    );
    try {
      await assert.rejects(
        openDynamoStore({ table: 'never-created', client: denied }),
        configError(/table "never-created" does not exist and these credentials cannot create it: create it with partition key "pk" of type String and no sort key/),
      );
      const { TableNames } = await client.send(new ListTablesCommand({}));
      assert.ok(!TableNames?.includes('never-created'));
    } finally {
      denied.destroy();
    }
  });

  it('uses a client the caller made and leaves it open on close', async () => {
    const mine = new DynamoDBClient({ endpoint: server.endpoint, region: 'us-east-1' });
    try {
      const store = await openDynamoStore({ table: 'baton', client: mine });
      const r = await store.write('own-client', null, acquireWrite('a'));
      assert.equal(r.ok, true);
      await store.close();
      const { TableNames } = await mine.send(new ListTablesCommand({}));
      assert.ok(TableNames?.includes('baton'), 'the caller\'s client still works after close');
    } finally {
      mine.destroy();
    }
  });
});

describe('dynamodb items', () => {
  it('keeps the term as a decimal number in term/<lock>, which outlives the lease item', async () => {
    const store = await openOn(server);
    try {
      const a = await store.write('items-term', null, acquireWrite('a'));
      assert.ok(a.ok);
      const b = await store.write('items-term', a.record.revision, acquireWrite('b'));
      assert.ok(b.ok);
      const counter = await client.send(new GetItemCommand({ TableName: 'baton', Key: { pk: { S: 'term/items-term' } }, ConsistentRead: true }));
      assert.equal(counter.Item?.val?.S, String(b.record.term));
      assert.equal(counter.Item?.ttl, undefined);
      await store.deleteRecord('items-term');
      const again = await store.write('items-term', null, acquireWrite('c'));
      assert.ok(again.ok && again.record.term > b.record.term, 'the counter survived the deletion');
      assert.notEqual(again.record.revision, a.record.revision, 'a recreated item gets a fresh revision');
    } finally {
      await store.close();
    }
  });

  it('renewMany renews hundreds of leases and answers each on its own (PutItem per lease: dynalite has no transactions)', async () => {
    const store = await openOn(server, 'baton', 10_000);
    try {
      const locks = Array.from({ length: 300 }, (_, i) => `many-${i}`);
      const held = await Promise.all(locks.map((lock) => store.write(lock, null, acquireWrite('a'))));
      const requests = held.map((r, i) => {
        assert.ok(r.ok);
        // Every tenth request carries a stale revision: it must fail alone.
        return { lock: locks[i]!, expected: i % 10 === 0 ? 'stale' : r.record.revision, next: keepWrite('a') };
      });
      const results = await store.renewMany!(requests);
      results.forEach((r, i) => assert.equal(r.ok, i % 10 !== 0, `lease ${i}`));
      // dynalite has no TransactWriteItems: its first answer turned this handle to PutItem per lease.
      assert.equal(store.backend.batchCall, 'PutItem');
      const after = await store.read('many-1');
      assert.equal(after?.revision, results[1]!.ok ? results[1]!.record.revision : undefined);
      assert.equal(after?.term, held[1]!.ok ? held[1]!.record.term : undefined, 'renewals keep the term');
    } finally {
      await store.close();
    }
  });
});

describe('dynamodb errors', () => {
  it('an unreachable endpoint is StoreUnavailableError (exit 69), one line naming the table', async () => {
    const port = await freePort();
    await assert.rejects(
      openDynamoStore({ table: 'baton', endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1', timeoutMs: 500 }),
      (err: Error) => err instanceof StoreUnavailableError && exitCodeFor(err) === 69 && /dynamodb: table "baton"/.test(err.message) && !err.message.includes('\n'),
    );
  });

  it('a missing SDK is one line naming the npm command (exit 78)', async () => {
    const missing = () => Promise.reject(Object.assign(new Error("Cannot find package '@aws-sdk/client-dynamodb'"), { code: 'ERR_MODULE_NOT_FOUND' }));
    await assert.rejects(loadDynamoSdk(missing), configError(/npm install @aws-sdk\/client-dynamodb/));
  });
});

async function waitActive(table: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
    if (Table?.TableStatus === 'ACTIVE') return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${table} never turned ACTIVE`);
}
