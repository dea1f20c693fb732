/**
 * The `dynamodb://TABLE[?endpoint=URL&region=NAME&timeout=MS&batch=transact|off]` URL, checked without I/O.
 * Region, credentials and endpoint otherwise come from the AWS SDK's own resolution
 * (AWS_REGION / the profile, the default credential chain, AWS_ENDPOINT_URL_DYNAMODB).
 */
import { InvalidConfigError } from '../../core/errors.js';
import { checkQueryOptions, redactUrl } from '../kit/url.js';

/** DynamoConfig is what `open` needs: the table and the optional SDK overrides. */
export interface DynamoConfig {
  readonly table: string;
  /** An endpoint URL (dynalite, DynamoDB Local, a VPC endpoint); the SDK's default otherwise. */
  readonly endpoint?: string;
  readonly region?: string;
  /** Per-request timeout in ms (default 5000): a frozen endpoint costs at most this per attempt. */
  readonly timeoutMs: number;
  /** How renewMany writes: `transact` (TransactWriteItems, default) or `off` (one PutItem per lease). */
  readonly batch?: 'transact' | 'off';
}

/** DYNAMO_URL_OPTIONS are the query options the URL accepts. */
export const DYNAMO_URL_OPTIONS = ['endpoint', 'region', 'timeout', 'batch'] as const;
/** DEFAULT_DYNAMO_TIMEOUT_MS bounds one HTTP request to DynamoDB. */
export const DEFAULT_DYNAMO_TIMEOUT_MS = 5_000;

// DynamoDB's own rule for table names.
const TABLE_NAME = /^[A-Za-z0-9_.-]{3,255}$/;
const SHAPE = /^dynamodb:\/\/([^/?#]*)\/?(?:\?([^#]*))?$/i;

/** parseDynamoUrl checks a dynamodb:// URL; a bad part is a one-line InvalidConfigError. */
export function parseDynamoUrl(text: string): DynamoConfig {
  const m = SHAPE.exec(text.trim());
  if (!m) throw new InvalidConfigError(`dynamodb: "${redactUrl(text)}" is not a dynamodb URL (expected dynamodb://TABLE[?endpoint=URL&region=NAME&timeout=MS&batch=transact|off])`);
  const table = m[1]!;
  if (!TABLE_NAME.test(table)) {
    throw new InvalidConfigError(`dynamodb: table name "${table}" is not 3–255 characters of A–Z, a–z, 0–9, "_", "-", "."`);
  }
  const params = new URLSearchParams(m[2] ?? '');
  checkQueryOptions('dynamodb', params, DYNAMO_URL_OPTIONS);
  return { table, ...endpointOf(params.get('endpoint')), ...regionOf(params.get('region')), timeoutMs: timeoutOf(params.get('timeout')), ...batchOf(params.get('batch')) };
}

function endpointOf(text: string | null): { endpoint?: string } {
  if (text === null) return {};
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new InvalidConfigError(`dynamodb: endpoint "${text}" is not a URL (expected e.g. http://127.0.0.1:8000)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidConfigError(`dynamodb: endpoint "${text}" is not http:// or https://`);
  return { endpoint: text };
}

function regionOf(text: string | null): { region?: string } {
  if (text === null) return {};
  if (!/^[a-z]{2}(-[a-z0-9]+)+$/.test(text)) throw new InvalidConfigError(`dynamodb: region "${text}" is not an AWS region name (e.g. eu-west-1)`);
  return { region: text };
}

function timeoutOf(text: string | null): number {
  if (text === null) return DEFAULT_DYNAMO_TIMEOUT_MS;
  const ms = Number(text);
  if (!/^\d+$/.test(text) || ms < 100 || ms > 600_000) throw new InvalidConfigError(`dynamodb: timeout "${text}" is not a whole number of ms from 100 to 600000`);
  return ms;
}

function batchOf(text: string | null): { batch?: 'transact' | 'off' } {
  if (text === null) return {};
  if (text !== 'transact' && text !== 'off') throw new InvalidConfigError(`dynamodb: batch "${text}" is not transact or off`);
  return { batch: text };
}
