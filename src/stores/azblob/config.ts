/**
 * The `azblob:` URL, checked without I/O:
 *
 *   azblob://CONTAINER[?prefix=baton/&timeout=5s]            credentials from AZURE_STORAGE_CONNECTION_STRING
 *   azblob://ACCOUNT/CONTAINER[?…]                          https://ACCOUNT.blob.core.windows.net with the
 *                                                           Azure credential chain (@azure/identity)
 *
 * `?endpoint=URL` names the blob service instead (the connection string's BlobEndpoint, or the
 * account's default URL): a private endpoint, another cloud, or a proxy in front of azurite.
 */
import { parseDuration } from '../../core/duration.js';
import { InvalidConfigError } from '../../core/errors.js';
import { checkQueryOptions, redactUrl } from '../kit/url.js';

/** AzblobConfig is what `open` needs: where the container is and how to sign in. */
export interface AzblobConfig {
  /** The container that holds baton's blobs. */
  readonly container: string;
  /** A connection string (AZURE_STORAGE_CONNECTION_STRING), or the account to reach with the credential chain. */
  readonly auth: { readonly connectionString: string } | { readonly account: string };
  /** Prepended to every blob name. Default `baton/`. */
  readonly prefix: string;
  /** Deadline of each request, in ms. Default 5000. */
  readonly timeoutMs: number;
  /** The blob service URL, when `?endpoint=` overrides the connection string's or the account's. */
  readonly endpoint?: string;
}

/** DEFAULT_PREFIX keeps baton's blobs in one folder of a container that may hold other data. */
export const DEFAULT_PREFIX = 'baton/';
/** DEFAULT_TIMEOUT_MS bounds each request, so a frozen server fails the call well inside a renew deadline. */
export const DEFAULT_TIMEOUT_MS = 5000;

const SHAPE = /^azblob:\/\/([^/?#]*)(?:\/([^/?#]*))?\/?(?:\?([^#]*))?$/i;
const KNOWN = ['prefix', 'timeout', 'endpoint'];

/** parseAzblobUrl reads an `azblob:` URL (see the file comment); env supplies the connection string. */
export function parseAzblobUrl(text: string, env: NodeJS.ProcessEnv): AzblobConfig {
  const m = SHAPE.exec(text.trim());
  if (!m) throw new InvalidConfigError(`azblob: "${redactUrl(text)}" is not azblob://CONTAINER or azblob://ACCOUNT/CONTAINER`);
  const [, first = '', second, query = ''] = m;
  const params = new URLSearchParams(query);
  checkQueryOptions('azblob', params, KNOWN);
  const prefix = params.get('prefix') ?? DEFAULT_PREFIX;
  if (prefix.length > 200 || /[\\\u0000-\u001f]/.test(prefix)) throw new InvalidConfigError(`azblob: prefix "${prefix}" must be at most 200 printable characters without "\\"`);
  const timeoutText = params.get('timeout');
  const timeoutMs = timeoutText === null ? DEFAULT_TIMEOUT_MS : parseDuration(timeoutText, 'azblob: timeout');
  if (timeoutMs < 100 || timeoutMs > 120_000) throw new InvalidConfigError(`azblob: timeout "${timeoutText}" must be between 100ms and 2m`);
  const endpoint = params.get('endpoint') ?? undefined;
  if (endpoint !== undefined && !/^https?:\/\/[^/?#\s]+(\/[^?#\s]*)?$/.test(endpoint)) {
    throw new InvalidConfigError(`azblob: endpoint "${endpoint}" is not an http(s) URL`);
  }
  const extra = endpoint === undefined ? {} : { endpoint: endpoint.replace(/\/+$/, '') };
  if (second === undefined) {
    const connectionString = env.AZURE_STORAGE_CONNECTION_STRING?.trim();
    if (!connectionString) {
      throw new InvalidConfigError(
        `azblob: azblob://${first} needs AZURE_STORAGE_CONNECTION_STRING (or name the account, azblob://ACCOUNT/${first || 'CONTAINER'}, to use Azure credentials)`,
      );
    }
    if (!/(^|;)\s*(AccountName|BlobEndpoint|UseDevelopmentStorage)\s*=/i.test(connectionString)) {
      throw new InvalidConfigError('azblob: AZURE_STORAGE_CONNECTION_STRING is not a storage connection string (no AccountName= or BlobEndpoint=)');
    }
    return { container: checkContainer(first), auth: { connectionString }, prefix, timeoutMs, ...extra };
  }
  if (!/^[a-z0-9]{3,24}$/.test(first)) throw new InvalidConfigError(`azblob: account "${first}" must be 3–24 lower-case letters and digits`);
  return { container: checkContainer(second), auth: { account: first }, prefix, timeoutMs, ...extra };
}

/** checkContainer applies Azure's container naming rule, so a typo fails here and not at the first request. */
function checkContainer(name: string): string {
  if (!/^[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]$/.test(name)) {
    throw new InvalidConfigError(`azblob: container "${name}" must be 3–63 of a-z, 0-9 and "-" (no "--", no "-" at either end)`);
  }
  return name;
}
