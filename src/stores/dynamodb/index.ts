/**
 * dynamodb://TABLE — leases in an Amazon DynamoDB table: the kit's CasStore over DynamoBackend
 * (backend.ts), so the record, the revision, the term counter and the ledger are the kit's.
 *
 * The term is a number kept in the item `term/<lock>`, which is never deleted and has no TTL;
 * an acquisition reserves `max(counter, lease term) + 1` on it by a conditional write before it
 * writes the lease (see kit/cas-store.ts). Expiry is by local observation: the elector times a
 * lease from when it saw the revision change, on its own monotonic clock. No timestamp written
 * by another host is ever compared with this host's clock — clocks across hosts drift and step
 * (NTP corrections, VM pauses), and a lease judged by a skewed clock can be taken while its
 * holder still acts — and DynamoDB's own TTL deletes items up to days late, so it is not used.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CasStore } from '../kit/cas-store.js';
import { DynamoBackend, type DynamoBatchMode } from './backend.js';
import { DEFAULT_DYNAMO_TIMEOUT_MS, type DynamoConfig } from './config.js';
import { loadDynamoSdk, makeDynamoClient } from './sdk.js';
import { ensureTable } from './table.js';

export { parseDynamoUrl, type DynamoConfig } from './config.js';
export { TABLE_SCHEMA_TEXT } from './table.js';
export type { DynamoBatchMode } from './backend.js';

/** DynamoStoreOptions open a DynamoDB store from code. */
export interface DynamoStoreOptions {
  /** The table's name. */
  table: string;
  /** A client the caller made (its region, credentials, endpoint); baton never destroys it. */
  client?: DynamoDBClient;
  /** Used only when no client is given: endpoint, region and request timeout overrides. */
  endpoint?: string;
  region?: string;
  timeoutMs?: number;
  /** How renewMany writes: `transact` (TransactWriteItems of up to 100 leases, default) or `off` (one PutItem per lease). */
  batch?: DynamoBatchMode;
  /** Create the table when it is missing (default true). */
  createTable?: boolean;
}

/** DynamoStore is a LeaseStore over one DynamoDB table; make one with openDynamoStore. */
export class DynamoStore extends CasStore {
  constructor(readonly backend: DynamoBackend) {
    super(backend);
  }
  /** table is the DynamoDB table's name. */
  get table(): string {
    return this.backend.table;
  }
}

/**
 * openDynamoStore loads the SDK, checks the table (creating it when missing and allowed) and
 * returns the store. No SDK → InvalidConfigError naming the npm command; bad region,
 * credentials or key schema → InvalidConfigError; unreachable → StoreUnavailableError.
 */
export async function openDynamoStore(options: DynamoStoreOptions | DynamoConfig): Promise<DynamoStore> {
  const sdk = await loadDynamoSdk();
  const given = 'client' in options ? options.client : undefined;
  const client = given ?? makeDynamoClient(sdk, { table: options.table, endpoint: options.endpoint, region: options.region, timeoutMs: options.timeoutMs ?? DEFAULT_DYNAMO_TIMEOUT_MS });
  const backend = new DynamoBackend(sdk, client, options.table, !given, options.batch ?? 'transact');
  try {
    if (!('createTable' in options) || options.createTable !== false) await ensureTable(sdk, client, options.table);
    return new DynamoStore(backend);
  } catch (err) {
    await backend.close();
    throw err;
  }
}
