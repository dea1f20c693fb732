/**
 * Lazy loading of @aws-sdk/client-dynamodb, an optional peer dependency: nothing imports it
 * until a dynamodb:// store opens, and a missing package is one line (exit 78) naming the
 * install command. The client follows the SDK's standard resolution for whatever the URL does
 * not say: region (AWS_REGION, the profile), credentials (the default chain), endpoint
 * (AWS_ENDPOINT_URL_DYNAMODB).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { InvalidConfigError } from '../../core/errors.js';
import type { DynamoConfig } from './config.js';

/** DynamoSdk is the module @aws-sdk/client-dynamodb. */
export type DynamoSdk = typeof import('@aws-sdk/client-dynamodb');

/** loadDynamoSdk imports the SDK, or throws InvalidConfigError naming the npm command. */
export async function loadDynamoSdk(load: () => Promise<DynamoSdk> = () => import('@aws-sdk/client-dynamodb')): Promise<DynamoSdk> {
  try {
    return await load();
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new InvalidConfigError('dynamodb: the DynamoDB store needs the AWS SDK: npm install @aws-sdk/client-dynamodb');
    }
    throw err;
  }
}

/** MAX_SOCKETS bounds the client's pooled connections (above renewMany's 64 writes in flight). */
const MAX_SOCKETS = 128;
const SILENT = { trace() {}, debug() {}, info() {}, warn() {}, error() {} };

/**
 * makeDynamoClient builds a client for `config`: URL overrides first, the SDK's resolution for
 * the rest. Requests are bounded (`timeoutMs` each) so a frozen endpoint fails a call instead
 * of hanging it; the SDK's standard retries (3 attempts) stay on.
 */
export function makeDynamoClient(sdk: DynamoSdk, config: DynamoConfig): DynamoDBClient {
  // SDK releases from 2027 on need Node 22; the pinned line runs on Node 20, and the SDK's
  // seven-line warning about it would break baton's one-line output. The package.json
  // devDependency pin and docs/stores/dynamodb.md say which versions work.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  return new sdk.DynamoDBClient({
    ...(config.region ? { region: config.region } : {}),
    ...(config.endpoint ? { endpoint: config.endpoint } : {}),
    maxAttempts: 3,
    requestHandler: {
      // The request timeout runs from the moment a call is made, so it also bounds a connect to
      // an address that never answers. (A connection timeout would also count the wait for a
      // free pooled socket, and fail calls to a server that is only busy.)
      requestTimeout: config.timeoutMs,
      throwOnRequestTimeout: true,
      httpAgent: { keepAlive: true, maxSockets: MAX_SOCKETS },
      httpsAgent: { keepAlive: true, maxSockets: MAX_SOCKETS },
      // The handler's own warnings (socket pool at capacity) are multi-line console output;
      // failures reach baton as errors and are reported there, one line each.
      logger: SILENT,
    },
  });
}
