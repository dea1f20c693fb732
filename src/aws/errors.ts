/**
 * How AWS failures become baton errors. AWS that cannot be reached, or that keeps answering
 * with throttling or server faults after the SDK's retries, is "unavailable" (exit 69); a request
 * AWS refuses for what it is — missing permission, unknown group or hook, no credentials — is a
 * configuration problem (exit 78). SDK error classes never leave src/aws.
 */
import { BatonError, InvalidConfigError } from '../core/errors.js';

/** AwsUnavailableError: AWS (an API or instance metadata) could not be reached (exit 69). */
export class AwsUnavailableError extends BatonError {}

/** AwsRequestError: AWS refused a request for what it asked (exit 78); `code` is AWS's error code. */
export class AwsRequestError extends InvalidConfigError {
  constructor(message: string, readonly code: string) {
    super(message);
  }
}

// Codes the SDK retries as throttling or transient; once retries are spent they mean "unavailable".
const TRANSIENT = new Set([
  'Throttling', 'ThrottlingException', 'ThrottledException', 'RequestThrottledException', 'TooManyRequestsException',
  'ProvisionedThroughputExceededException', 'TransactionInProgressException', 'RequestLimitExceeded', 'BandwidthLimitExceeded',
  'LimitExceededException', 'RequestThrottled', 'SlowDown', 'PriorRequestNotComplete', 'EC2ThrottledException',
  'RequestTimeout', 'RequestTimeoutException', 'InternalFailure', 'InternalError', 'ServiceUnavailable', 'Unavailable',
  'TimeoutError', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH',
]);

/**
 * translateAwsError turns anything an SDK call threw into AwsUnavailableError or
 * AwsRequestError, with a one-line message naming the operation.
 */
export function translateAwsError(operation: string, err: unknown): BatonError {
  if (err instanceof BatonError) return err;
  const e = (err ?? {}) as { name?: string; code?: string; message?: string; $fault?: string; $metadata?: { httpStatusCode?: number } };
  const code = e.name && e.name !== 'Error' ? e.name : (e.code ?? 'Error');
  const message = `aws: ${operation}: ${code}: ${firstLine(e.message ?? String(err))}`;
  if (code === 'CredentialsProviderError') {
    return new AwsRequestError(`aws: ${operation}: no AWS credentials (instance profile, AWS_PROFILE or AWS_ACCESS_KEY_ID): ${firstLine(e.message ?? '')}`, code);
  }
  const status = e.$metadata?.httpStatusCode;
  if (TRANSIENT.has(code) || (e.code !== undefined && TRANSIENT.has(e.code)) || status === undefined || status >= 500 || status === 429) {
    return new AwsUnavailableError(message, { cause: err });
  }
  return new AwsRequestError(message, code);
}

/** awsCall runs one SDK call and translates what it throws. */
export async function awsCall<T>(operation: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw translateAwsError(operation, err);
  }
}

function firstLine(s: string): string {
  return s.split('\n')[0]!.trim();
}
