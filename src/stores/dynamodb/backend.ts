/**
 * DynamoBackend is the kit's CasBackend over one DynamoDB table (schema in table.ts): every
 * read is a strongly consistent GetItem, every write a PutItem with a condition on the item's
 * `rev` — `attribute_not_exists(pk)` to create, `rev = :expected` to replace. A failed
 * condition (ConditionalCheckFailedException) is a lost race, returned as null.
 *
 * `rev` is a fresh random token (96 bits) per write, so a version is never reused for a key,
 * not even after the item is deleted and created again (a per-item counter would restart at 1).
 *
 * `replaceMany` (the kit's batch renewal) writes up to 100 leases per TransactWriteItems and
 * reads the per-item cancellation reasons (transact.ts); a server that does not know the call
 * (dynalite) is detected at its first answer, and the handle renews one PutItem per lease from
 * then on. `batch: 'off'` asks for one PutItem per lease from the start.
 *
 * No watch: DynamoDB has no change feed a client can hold open (Streams is a shard-polling API
 * with its own cost), so the store declares no `notify` and the elector's standbys poll one
 * consistent GetItem per retry period, with jitter.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { BackendItem, CasBackend, ReplaceItem } from '../kit/backend.js';
import { ClosedGuard } from '../kit/guard.js';
import { StoreClosedError } from '../../core/errors.js';
import { dynamoError, sdkErrorName } from './errors.js';
import type { DynamoSdk } from './sdk.js';
import { backoffMs, isThrottled, sendTransaction, THROTTLE_RETRIES, TRANSACT_ATTEMPTS, TRANSACT_MAX_ITEMS } from './transact.js';

/** RENEW_CONCURRENCY bounds how many conditional PutItems one renewMany keeps in flight. */
export const RENEW_CONCURRENCY = 64;
/** TRANSACTIONS_IN_FLIGHT bounds how many TransactWriteItems one renewMany keeps in flight. */
export const TRANSACTIONS_IN_FLIGHT = 8;

/** DynamoBatchMode: how renewMany writes — `transact` (TransactWriteItems, the default) or `off` (one PutItem per lease). */
export type DynamoBatchMode = 'transact' | 'off';

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
    readonly batch: DynamoBatchMode = 'transact',
  ) {}

  /** Whether the server runs TransactWriteItems: unknown until the first batch asks it. */
  private transactions: boolean | undefined;

  /** batchCall names the call renewMany uses now: TransactWriteItems, or PutItem per lease (batch off, or a server without transactions). */
  get batchCall(): 'TransactWriteItems' | 'PutItem' {
    return this.batch === 'off' || this.transactions === false ? 'PutItem' : 'TransactWriteItems';
  }

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
   * replaceMany renews many leases: TransactWriteItems of up to 100 leases each,
   * TRANSACTIONS_IN_FLIGHT at once (see transact.ts for how a cancelled one is read and sent
   * again), or one conditional PutItem per lease (`batch: 'off'`, a server without transactions,
   * a batch of one). BatchWriteItem takes no conditions (unsafe).
   * A lost race is null on its own. A group that still fails after its retries (unreachable,
   * throttled past the backoffs) fails the whole call, after every group has had its answer: a
   * null would read as a lost race, and the elector steps a leader down on one refused at its own
   * revision. As a store error each leader keeps its lease until its renew deadline and renews
   * again; one whose renewal did land meanwhile finds its new revision with one read and adopts it.
   */
  async replaceMany(items: readonly ReplaceItem[]): Promise<(string | null)[]> {
    this.guard.check();
    if (this.batchCall === 'PutItem' || items.length < 2) return this.replaceEach(items);
    const groups = transactionGroups(items);
    const out: (string | null)[] = new Array(items.length).fill(null);
    let failures = 0;
    let firstError: unknown;
    const send = async (group: number[]) => {
      try {
        const versions = await this.transactGroup(group.map((i) => items[i]!));
        group.forEach((i, j) => (out[i] = versions[j] ?? null));
      } catch (err) {
        failures += group.length;
        firstError ??= err;
      }
    };
    // The first group alone while it is unknown whether the server has transactions, so that a
    // server without them is asked once, not once per group in flight.
    let next = 0;
    if (this.transactions === undefined) await send(groups[next++]!);
    const worker = async () => {
      while (next < groups.length) await send(groups[next++]!);
    };
    await Promise.all(Array.from({ length: Math.min(TRANSACTIONS_IN_FLIGHT, groups.length - next) }, worker));
    if (failures > 0) throw firstError;
    return out;
  }

  /**
   * transactGroup renews up to 100 leases in one transaction: a cancelled one is sent again
   * without the leases that lost their condition (after a backoff if it was throttled), at most
   * TRANSACT_ATTEMPTS times; what is left then goes one PutItem per lease.
   */
  private async transactGroup(items: readonly ReplaceItem[]): Promise<(string | null)[]> {
    const out: (string | null)[] = new Array(items.length).fill(null);
    let pending = items.map((_, i) => i);
    let attempts = 0;
    let throttles = 0;
    while (pending.length > 1 && attempts < TRANSACT_ATTEMPTS && this.transactions !== false) {
      this.guard.check();
      const batch = pending.map((i) => items[i]!);
      const revs = batch.map(() => newRevision());
      let outcome;
      try {
        outcome = await sendTransaction(this.sdk, this.client, this.table, batch, revs);
      } catch (err) {
        // Throttled as a whole (after the SDK's own retries): wait, then the same transaction again.
        if (isThrottled(sdkErrorName(err)) && throttles < THROTTLE_RETRIES && !this.guard.closed) {
          await sleep(backoffMs(throttles++));
          continue;
        }
        throw this.closedOr(err, 'TransactWriteItems');
      }
      if (outcome.kind === 'unsupported') {
        this.transactions = false;
        break;
      }
      this.transactions = true;
      if (outcome.kind === 'written') {
        pending.forEach((i, j) => (out[i] = revs[j]!));
        return out;
      }
      // Lost conditions are answered null; the rest were cancelled only because of them (or of
      // throttling, or a concurrent write) and go again.
      pending = pending.filter((_, j) => !outcome.lost[j]);
      if (outcome.throttled && throttles < THROTTLE_RETRIES) await sleep(backoffMs(throttles++));
      else attempts++;
    }
    const rest = await this.replaceEach(pending.map((i) => items[i]!));
    pending.forEach((i, j) => (out[i] = rest[j] ?? null));
    return out;
  }

  /** replaceEach renews one conditional PutItem per lease, RENEW_CONCURRENCY in flight; throws only when every item failed. */
  private async replaceEach(items: readonly ReplaceItem[]): Promise<(string | null)[]> {
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

  async remove(key: string, version: string): Promise<boolean> {
    this.guard.check();
    try {
      await this.client.send(
        new this.sdk.DeleteItemCommand({ TableName: this.table, Key: { pk: { S: key } }, ConditionExpression: 'rev = :expected', ExpressionAttributeValues: { ':expected': { S: version } } }),
      );
      return true;
    } catch (err) {
      if (sdkErrorName(err) !== 'ConditionalCheckFailedException') throw this.closedOr(err, 'DeleteItem');
      // Refused on a retry: our first attempt may have landed unanswered, leaving the item gone.
      return ((err as { $metadata?: { attempts?: number } }).$metadata?.attempts ?? 1) > 1 && (await this.get(key)) === null;
    }
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
      if (sdkErrorName(err) !== 'ConditionalCheckFailedException') throw this.closedOr(err, 'PutItem');
      // A refusal on the SDK's second or third attempt may be of our own first attempt, applied
      // but unanswered (a timeout, a reset): the item then carries our fresh revision.
      if (((err as { $metadata?: { attempts?: number } }).$metadata?.attempts ?? 1) > 1 && (await this.get(key))?.version === rev) return rev;
      return null;
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

/**
 * transactionGroups splits a batch into groups of at most TRANSACT_MAX_ITEMS indices, no key twice
 * in one group (DynamoDB refuses a transaction that names an item twice).
 */
function transactionGroups(items: readonly ReplaceItem[]): number[][] {
  const groups: { indices: number[]; keys: Set<string> }[] = [];
  let open = 0;
  items.forEach((item, i) => {
    let g = open;
    while (g < groups.length && (groups[g]!.indices.length >= TRANSACT_MAX_ITEMS || groups[g]!.keys.has(item.key))) g++;
    if (g === groups.length) groups.push({ indices: [], keys: new Set() });
    groups[g]!.indices.push(i);
    groups[g]!.keys.add(item.key);
    while (open < groups.length && groups[open]!.indices.length >= TRANSACT_MAX_ITEMS) open++;
  });
  return groups.map((g) => g.indices);
}

function itemOf(item: Item): BackendItem {
  return { key: item.pk?.S ?? '', value: item.val?.S ?? '', version: item.rev?.S ?? '' };
}
