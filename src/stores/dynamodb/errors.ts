/**
 * How SDK failures read: a lost condition is a value (handled by the caller), a configuration
 * problem (no region, no or refused credentials, wrong key schema) is InvalidConfigError (exit
 * 78), anything else — refused connections, timeouts, throttling after retries — is
 * StoreUnavailableError (exit 69). Each is one line naming the table.
 */
import { BatonError, InvalidConfigError } from '../../core/errors.js';
import { oneLine, unavailable } from '../kit/errors.js';

/** sdkErrorName is the SDK's error name (e.g. "ConditionalCheckFailedException"), or ''. */
export function sdkErrorName(err: unknown): string {
  return typeof err === 'object' && err !== null && typeof (err as { name?: unknown }).name === 'string' ? (err as { name: string }).name : '';
}

const CONFIG_ERRORS = new Set([
  'CredentialsProviderError',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'AccessDeniedException',
  'MissingAuthenticationTokenException',
  'IncompleteSignatureException',
]);

/** isConfigError says whether `err` is about region, credentials or permissions rather than reachability. */
export function isConfigError(err: unknown): boolean {
  const name = sdkErrorName(err);
  if (CONFIG_ERRORS.has(name)) return true;
  return /Region is missing|Could not load credentials/i.test(String((err as Error)?.message ?? ''));
}

/**
 * dynamoError turns an SDK failure into a BatonError: configuration problems into
 * InvalidConfigError, the rest into StoreUnavailableError, both `dynamodb: <table>: <what>`.
 */
export function dynamoError(table: string, err: unknown, where?: string): BatonError {
  if (err instanceof BatonError) return err;
  if (isConfigError(err)) {
    const text = oneLine(String((err as Error)?.message ?? err));
    if (/Region is missing/i.test(text)) return new InvalidConfigError(`dynamodb: table "${table}": no AWS region: set AWS_REGION or add ?region=NAME to the URL`, { cause: err });
    if (sdkErrorName(err) === 'CredentialsProviderError') {
      return new InvalidConfigError(`dynamodb: table "${table}": no AWS credentials found (the SDK's default chain: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, web identity, container or instance role)`, { cause: err });
    }
    return new InvalidConfigError(`dynamodb: table "${table}": ${sdkErrorName(err) || 'credentials'}: ${text}`, { cause: err });
  }
  return unavailable('dynamodb', err, where ? `table "${table}": ${where}` : `table "${table}"`);
}
