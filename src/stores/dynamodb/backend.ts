/**
 * DynamoBackend is the kit's CasBackend over one DynamoDB table (schema in table.ts): every
 * read is a strongly consistent GetItem, every write a PutItem with a condition on the item's
 * `rev` — `attribute_not_exists(pk)` to create, `rev = :expected` to replace. A failed
 * condition (ConditionalCheckFailedException) is a lost race, returned as null.
 *
 * `rev` is a fresh random token (96 bits) per write, so a version is never reused for a key,
 * not even after the item is deleted and created again (a per-item counter would restart at 1).
 *
 * No watch: DynamoDB has no change feed a client can hold open (Streams is a shard-polling API
 * with its own cost), so the store declares no `notify` and the elector's standbys poll one
 * consistent GetItem per retry period, with jitter.
 */
import { randomBytes } from 'node:crypto';
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { BackendItem, CasBackend, ReplaceItem } from '../kit/backend.js';
import { ClosedGuard } from '../kit/guard.js';
import { StoreClosedError } from '../../core/errors.js';
import { dynamoError, sdkErrorName } from './errors.js';
import type { DynamoSdk } from './sdk.js';

/** RENEW_CONCURRENCY bounds how many conditional PutItems one renewMany keeps in flight. */
export const RENEW_CONCURRENCY = 64;

type Item = Record<string, AttributeValue>;

/** DynamoBackend: see the file comment. */
export class DynamoBackend implements CasBackend {
  readonly name = 'dynamodb';
  private readonly guard = new ClosedGuard('dynamodb');

  /**
   * @param ownsClient whether close() destroys the client (false for a client a library user passed in).
   */
  constructor(
    private readonly sdk: DynamoSdk,
    readonly client: DynamoDBClient,
    readonly table: string,
    private readonly ownsClient: boolean,
  ) {}

  async get(key: string): Promise<BackendItem | null> {
    this.guard.check();
    const out = await this.call('GetItem', () => this.client.send(new this.sdk.GetItemCommand({ TableName: this.table, Key: { pk: { S: key } }, ConsistentRead: true })));
    return out.Item ? itemOf(out.Item) : null;
  }

  async create(key: string, value: string): Promise<string | null> {
    this.guard.check();
    return this.put(key, value, 'attribute_not_exists(pk)', {});
  }

  async replace(key: string, version: string, value: string): Promise<string | null> {
    this.guard.check();
    return this.put(key, value, 'rev = :expected', { ':expected': { S: version } });
  }

  /**
   * replaceMany renews many leases: one conditional PutItem each, RENEW_CONCURRENCY in flight.
   * BatchWriteItem takes no conditions (unsafe); TransactWriteItems is all-or-nothing (one lost
   * lease cancels the other 99 renewals) at twice the write cost. PartiQL BatchExecuteStatement
   * would carry 25 independent conditional writes per call, but dynalite cannot run it, so it is
   * not used (docs/stores/dynamodb.md, "Batch renewal").
   * A failed item is null on its own; only when every item failed does the call throw.
   */
  async replaceMany(items: readonly ReplaceItem[]): Promise<(string | null)[]> {
    this.guard.check();
    const out: (string | null)[] = new Array(items.length).fill(null);
    let failures = 0;
    let firstError: unknown;
    let next = 0;
    const worker = async () => {
      while (next < items.length) {
        const i = next++;
        const item = items[i]!;
        try {
          out[i] = await this.replace(item.key, item.version, item.value);
        } catch (err) {
          failures++;
          firstError ??= err;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(RENEW_CONCURRENCY, items.length) }, worker));
    if (items.length > 0 && failures === items.length) throw firstError;
    return out;
  }

  async list(prefix: string, limit: number): Promise<BackendItem[]> {
    this.guard.check();
    const found: BackendItem[] = [];
    let start: Item | undefined;
    do {
      const page = await this.call('Scan', () =>
        this.client.send(
          new this.sdk.ScanCommand({
            TableName: this.table,
            ConsistentRead: true,
            FilterExpression: 'begins_with(pk, :prefix)',
            ExpressionAttributeValues: { ':prefix': { S: prefix } },
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        ),
      );
      for (const item of page.Items ?? []) found.push(itemOf(item));
      start = page.LastEvaluatedKey;
    } while (start);
    found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return found.slice(0, limit);
  }

  async delete(key: string): Promise<void> {
    this.guard.check();
    await this.call('DeleteItem', () => this.client.send(new this.sdk.DeleteItemCommand({ TableName: this.table, Key: { pk: { S: key } } })));
  }

  async close(): Promise<void> {
    if (!this.guard.close()) return;
    if (this.ownsClient) this.client.destroy();
  }

  private async put(key: string, value: string, condition: string, values: Item): Promise<string | null> {
    const rev = newRevision();
    try {
      await this.client.send(
        new this.sdk.PutItemCommand({
          TableName: this.table,
          Item: { pk: { S: key }, val: { S: value }, rev: { S: rev } },
          ConditionExpression: condition,
          ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
        }),
      );
      return rev;
    } catch (err) {
      if (sdkErrorName(err) === 'ConditionalCheckFailedException') return null;
      throw this.closedOr(err, 'PutItem');
    }
  }

  private async call<T>(where: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (err) {
      throw this.closedOr(err, where);
    }
  }

  /** closedOr reports a call cut short by close() as the closed handle, anything else translated. */
  private closedOr(err: unknown, where: string): Error {
    if (this.guard.closed) return new StoreClosedError('dynamodb');
    return dynamoError(this.table, err, where);
  }
}

/** newRevision is a fresh version token: 96 random bits, base64url. */
function newRevision(): string {
  return randomBytes(12).toString('base64url');
}

function itemOf(item: Item): BackendItem {
  return { key: item.pk?.S ?? '', value: item.val?.S ?? '', version: item.rev?.S ?? '' };
}
