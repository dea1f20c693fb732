/**
 * The Azure SDK, loaded only when an azblob store opens: @azure/storage-blob (optional peer;
 * 12.32.0 is the newest release that runs on Node 20 — 12.33 needs Node 22) and, for
 * `azblob://ACCOUNT/CONTAINER`, @azure/identity (optional peer; 4.13.1 is the newest on Node 20).
 * Also the one place that reads the SDK's errors.
 */
import type { ContainerClient } from '@azure/storage-blob';
import { InvalidConfigError, errorMessage } from '../../core/errors.js';
import type { AzblobConfig } from './config.js';

/** BlobSdk is the part of @azure/storage-blob the store uses. */
export type BlobSdk = typeof import('@azure/storage-blob');

/** loadBlobSdk imports @azure/storage-blob, or says in one line how to install it. */
export async function loadBlobSdk(): Promise<BlobSdk> {
  try {
    return await import('@azure/storage-blob');
  } catch (err) {
    throw new InvalidConfigError(`azblob: the @azure/storage-blob package is not installed (npm install @azure/storage-blob@12.32.0): ${errorMessage(err)}`);
  }
}

/**
 * containerClientFor builds the container's client from a parsed URL. The SDK's own retries are
 * off (one try, bounded by timeoutMs): the elector retries on its own schedule, and a retry
 * hidden inside one call could outlast a renew deadline.
 */
export async function containerClientFor(config: AzblobConfig): Promise<ContainerClient> {
  const sdk = await loadBlobSdk();
  const options = { retryOptions: { maxTries: 1, tryTimeoutInMs: config.timeoutMs }, keepAliveOptions: { enable: true } };
  if ('connectionString' in config.auth) {
    let service;
    try {
      service = sdk.BlobServiceClient.fromConnectionString(withEndpoint(config.auth.connectionString, config.endpoint), options);
    } catch (err) {
      throw new InvalidConfigError(`azblob: AZURE_STORAGE_CONNECTION_STRING is not usable: ${errorMessage(err).split('\n')[0]}`);
    }
    return service.getContainerClient(config.container);
  }
  let identity: typeof import('@azure/identity');
  try {
    identity = await import('@azure/identity');
  } catch (err) {
    throw new InvalidConfigError(
      `azblob: azblob://${config.auth.account}/… signs in with @azure/identity, which is not installed (npm install @azure/identity@4.13.1), or set AZURE_STORAGE_CONNECTION_STRING and use azblob://${config.container}: ${errorMessage(err)}`,
    );
  }
  const url = config.endpoint ?? `https://${config.auth.account}.blob.core.windows.net`;
  const service = new sdk.BlobServiceClient(url, new identity.DefaultAzureCredential(), options);
  return service.getContainerClient(config.container);
}

/** withEndpoint sets a connection string's BlobEndpoint (when `endpoint` is given). */
function withEndpoint(connectionString: string, endpoint: string | undefined): string {
  if (!endpoint) return connectionString;
  const parts = connectionString.split(';').filter((p) => p.trim() !== '' && !/^\s*BlobEndpoint\s*=/i.test(p));
  return [...parts, `BlobEndpoint=${endpoint}`].join(';');
}

/** Failure is what the store needs to know about an SDK error: the HTTP status and Azure's error code. */
export interface Failure {
  /** HTTP status, or 0 when no answer came (network, timeout, abort). */
  readonly status: number;
  /** x-ms-error-code, e.g. "LeaseAlreadyPresent"; '' if none. */
  readonly code: string;
}

/** failureOf reads an SDK error (RestError) without importing its class. */
export function failureOf(err: unknown): Failure {
  const e = err as { statusCode?: unknown; code?: unknown; details?: { errorCode?: unknown } } | null;
  const status = typeof e?.statusCode === 'number' ? e.statusCode : 0;
  const code = typeof e?.details?.errorCode === 'string' ? e.details.errorCode : typeof e?.code === 'string' ? e.code : '';
  return { status, code };
}
