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

/**
 * makeDynamoClient builds a client for `config`: URL overrides first, the SDK's resolution for
 * the rest. Requests are bounded (connect 2 s, request `timeoutMs`) so a frozen endpoint fails
 * a call instead of hanging it; the SDK's standard retries (3 attempts) stay on.
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
    requestHandler: { connectionTimeout: Math.min(2_000, config.timeoutMs), requestTimeout: config.timeoutMs, throwOnRequestTimeout: true },
  });
}
