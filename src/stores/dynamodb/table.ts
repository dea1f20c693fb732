/**
 * The table baton keeps its items in, checked (and created when absent) when a store opens:
 *
 *   partition key  pk  (String)   — "lease/<lock>", "term/<lock>", "ledger/<key>"; no sort key
 *   attributes     val (String)   — the lease record JSON / the term number in decimal / the ledger value
 *                  rev (String)   — the item's version: a fresh random token on every write
 *   billing        PAY_PER_REQUEST (on-demand) when baton creates it; no TTL, no streams
 *
 * A partition key per item (rather than one partition for all leases) spreads a fleet's writes
 * over DynamoDB's partitions: one partition key value takes at most 1,000 writes a second.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { InvalidConfigError, StoreUnavailableError } from '../../core/errors.js';
import { dynamoError, isConfigError, sdkErrorName } from './errors.js';
import type { DynamoSdk } from './sdk.js';

/** TABLE_SCHEMA_TEXT says in one phrase which table baton needs, for error messages. */
export const TABLE_SCHEMA_TEXT = 'partition key "pk" of type String and no sort key';

/** How long a table baton created may stay CREATING before open gives up. */
const ACTIVE_WAIT_MS = 120_000;

/**
 * ensureTable probes `table` with one consistent GetItem; a missing table is created (on-demand
 * billing) and waited for; a table with another key schema, or a missing one these credentials
 * cannot create, is an InvalidConfigError that names the table and the schema it needs.
 */
export async function ensureTable(sdk: DynamoSdk, client: DynamoDBClient, table: string): Promise<void> {
  const missing = await probe(sdk, client, table);
  if (!missing) return;
  try {
    await client.send(
      new sdk.CreateTableCommand({
        TableName: table,
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
  } catch (err) {
    // Another process created it a moment ago: wait for it like for our own.
    if (sdkErrorName(err) !== 'ResourceInUseException') {
      if (isConfigError(err)) {
        throw new InvalidConfigError(`dynamodb: table "${table}" does not exist and these credentials cannot create it: create it with ${TABLE_SCHEMA_TEXT} (or allow dynamodb:CreateTable)`, { cause: err });
      }
      throw dynamoError(table, err, 'CreateTable');
    }
  }
  const until = Date.now() + ACTIVE_WAIT_MS;
  while (await probe(sdk, client, table)) {
    if (Date.now() > until) throw new StoreUnavailableError(`dynamodb: table "${table}" was created but is not ACTIVE after ${ACTIVE_WAIT_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** probe returns true if the table is missing (or still CREATING), false if it answers. */
async function probe(sdk: DynamoSdk, client: DynamoDBClient, table: string): Promise<boolean> {
  try {
    await client.send(new sdk.GetItemCommand({ TableName: table, Key: { pk: { S: 'probe/' } }, ConsistentRead: true }));
    return false;
  } catch (err) {
    const name = sdkErrorName(err);
    if (name === 'ResourceNotFoundException') return true;
    if (name === 'ValidationException') {
      throw new InvalidConfigError(`dynamodb: table "${table}" has another key schema: baton needs ${TABLE_SCHEMA_TEXT}`, { cause: err });
    }
    throw dynamoError(table, err, 'GetItem');
  }
}
