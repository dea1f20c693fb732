/**
 * Batch renewal over TransactWriteItems: up to TRANSACT_MAX_ITEMS conditional PutItems of lease
 * items (each `rev = :expected`) in one call. DynamoDB runs a transaction all or nothing, so one
 * lease whose condition fails cancels the others' renewals; the cancellation names a reason per
 * item, in request order, and that is what this file reads:
 *
 *   ConditionalCheckFailed          that lease was written by someone else: a lost race (null)
 *   None                            this item was fine, cancelled because of another: sent again
 *   ThrottlingError, Provisioned…,  throttled: sent again after a backoff, never a lost race
 *   RequestLimitExceeded,
 *   TransactionConflict             another request wrote the item meanwhile: sent again (its
 *                                   own condition then decides)
 *
 * Items sent again go in a new transaction, up to TRANSACT_ATTEMPTS in all; what is left then
 * (or a single item) goes as plain conditional PutItems. A whole call refused for throttling
 * (ThrottlingException, ProvisionedThroughputExceededException, RequestLimitExceeded) has
 * already been retried by the SDK; it is retried here with a longer backoff before it fails.
 *
 * Why not PartiQL BatchExecuteStatement (25 independent conditional UPDATEs per call, one write
 * unit each): neither server the tests run reports a failed condition per statement as DynamoDB
 * does. dynalite lacks the call; moto 5.2.5 runs `UPDATE … WHERE pk = ? AND rev = ?` on a stale
 * rev as a silent no-op answered like a success, so a lost lease would read as renewed there and
 * that path's one safety property could not be tested (docs/stores/dynamodb.md, "Batch renewal").
 */
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { ReplaceItem } from '../kit/backend.js';
import { sdkErrorName } from './errors.js';
import type { DynamoSdk } from './sdk.js';

/** TRANSACT_MAX_ITEMS is DynamoDB's limit of actions in one TransactWriteItems. */
export const TRANSACT_MAX_ITEMS = 100;
/** TRANSACT_ATTEMPTS bounds how often one lease is sent in a transaction within one batch. */
export const TRANSACT_ATTEMPTS = 3;
/** THROTTLE_RETRIES bounds the backoffs after a throttled answer (on top of the SDK's own attempts). */
export const THROTTLE_RETRIES = 4;
/** THROTTLE_BACKOFF_MS is the first backoff; each next one doubles, with full jitter. */
export const THROTTLE_BACKOFF_MS = 100;

/** Reasons (per item) and error names (per call) that mean "throttled": retried, never a lost race. */
const THROTTLED = new Set([
  'ThrottlingError',
  'ThrottlingException',
  'ProvisionedThroughputExceeded',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
]);

/** isThrottled says whether an error name or cancellation reason code means throttling. */
export function isThrottled(name: string): boolean {
  return THROTTLED.has(name);
}

/** TransactOutcome is one transaction's answer: the new revisions, or which items to send again. */
export type TransactOutcome =
  | { readonly kind: 'written' }
  | { readonly kind: 'cancelled'; readonly lost: readonly boolean[]; readonly throttled: boolean }
  | { readonly kind: 'unsupported' };

/**
 * sendTransaction writes `items` (each with its new revision in `revs`) in one TransactWriteItems.
 * Answers `written`, `cancelled` (with which items lost their condition), or `unsupported` when
 * the server does not know the call (dynalite answers UnknownOperationException). Any other
 * failure, including throttling of the whole call, is thrown as the SDK's error.
 */
export async function sendTransaction(sdk: DynamoSdk, client: DynamoDBClient, table: string, items: readonly ReplaceItem[], revs: readonly string[]): Promise<TransactOutcome> {
  try {
    await client.send(
      new sdk.TransactWriteItemsCommand({
        TransactItems: items.map((item, i) => ({
          Put: {
            TableName: table,
            Item: { pk: { S: item.key }, val: { S: item.value }, rev: { S: revs[i]! } } satisfies Record<string, AttributeValue>,
            ConditionExpression: 'rev = :expected',
            ExpressionAttributeValues: { ':expected': { S: item.version } },
          },
        })),
      }),
    );
    return { kind: 'written' };
  } catch (err) {
    const name = sdkErrorName(err);
    if (name === 'UnknownOperationException') return { kind: 'unsupported' };
    if (name !== 'TransactionCanceledException') throw err;
    const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
    // Without a reason per item nobody can tell which lease lost: send them all again.
    if (!reasons || reasons.length !== items.length) return { kind: 'cancelled', lost: items.map(() => false), throttled: false };
    return {
      kind: 'cancelled',
      lost: reasons.map((r) => r.Code === 'ConditionalCheckFailed'),
      throttled: reasons.some((r) => isThrottled(r.Code ?? '')),
    };
  }
}

/** backoffMs is the wait before retry `attempt` (0-based) after throttling: full jitter on a doubling base. */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  return Math.round(random() * THROTTLE_BACKOFF_MS * 2 ** attempt);
}
