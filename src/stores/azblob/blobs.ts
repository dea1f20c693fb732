/**
 * BlobCas is the kit's CasBackend over one Azure container, one blob per key (names.ts): the
 * version is the blob's ETag, create is a Put Blob with `If-None-Match: *`, replace a Put Blob
 * with `If-Match: <etag>` — both atomic on the server. It also carries the blob-lease calls the
 * lease records need (store.ts decides when to make them).
 *
 * Every call is bounded by the configured timeout. A refused condition (409, 412, 404) is a value;
 * no answer, a 5xx, or a refused credential is StoreUnavailableError.
 */
import type { ContainerClient } from '@azure/storage-blob';
import { StoreUnavailableError } from '../../core/errors.js';
import type { BackendItem, CasBackend } from '../kit/backend.js';
import { oneLine } from '../kit/errors.js';
import { blobName, keyOf, namePrefix } from './names.js';
import { failureOf, type Failure } from './sdk.js';

/** LEASE_ID_METADATA is the metadata key that names a lease record's current blob lease. */
export const LEASE_ID_METADATA = 'batonlease';

/** BlobItem is a key's value and ETag, with the blob lease's state as the server reports it. */
export interface BlobItem extends BackendItem {
  /** available | leased | expired | breaking | broken (Azure's x-ms-lease-state). */
  readonly leaseState: string;
  /** infinite | fixed, while leased. */
  readonly leaseDuration?: string;
  /** The lease ID written into the blob's metadata by the last acquisition. */
  readonly leaseId?: string;
}

/** PutOptions condition a Put Blob: on an ETag or absence, and on holding a lease. */
export interface PutOptions {
  readonly ifMatch?: string;
  readonly ifNoneMatch?: '*';
  readonly leaseId?: string;
  readonly metadata?: Record<string, string>;
}

/** Outcome is a call's new ETag, or the refusal Azure answered with. */
export type Outcome = { readonly etag: string } | { readonly refused: Failure };

/** BlobCas: see the file comment. */
export class BlobCas implements CasBackend {
  readonly name = 'azblob';

  constructor(
    readonly container: ContainerClient,
    readonly prefix: string,
    readonly timeoutMs: number,
  ) {}

  async get(key: string): Promise<BlobItem | null> {
    const res = await this.call('read', key, [404], (signal) => this.blob(key).download(0, undefined, { abortSignal: signal }));
    if ('refused' in res) return null;
    const body = await this.bounded('read', key, (signal) => readBody(res.readableStreamBody, signal));
    return {
      key,
      value: body,
      version: res.etag!,
      leaseState: res.leaseState ?? 'available',
      leaseDuration: res.leaseDuration,
      leaseId: res.metadata?.[LEASE_ID_METADATA],
    };
  }

  async create(key: string, value: string): Promise<string | null> {
    const out = await this.put(key, value, { ifNoneMatch: '*' });
    return 'etag' in out ? out.etag : null;
  }

  async replace(key: string, version: string, value: string): Promise<string | null> {
    const out = await this.put(key, value, { ifMatch: version });
    return 'etag' in out ? out.etag : null;
  }

  /** put writes a whole blob under the given conditions. */
  async put(key: string, value: string, options: PutOptions): Promise<Outcome> {
    const body = Buffer.from(value, 'utf8');
    const res = await this.call('write', key, [404, 409, 412], (signal) =>
      this.blob(key).upload(body, body.length, {
        abortSignal: signal,
        conditions: { ifMatch: options.ifMatch, ifNoneMatch: options.ifNoneMatch, leaseId: options.leaseId },
        metadata: options.metadata,
        blobHTTPHeaders: { blobContentType: 'application/json' },
      }),
    );
    return 'refused' in res ? res : { etag: res.etag! };
  }

  async list(prefix: string, limit: number): Promise<BlobItem[]> {
    const names: string[] = [];
    await this.bounded('list', prefix, async (signal) => {
      for await (const item of this.container.listBlobsFlat({ prefix: namePrefix(this.prefix, prefix), abortSignal: signal })) names.push(item.name);
    });
    // Escaping changes the order of some characters: sort by the keys themselves.
    const keys = names.map((n) => keyOf(this.prefix, n)).sort();
    const items = await Promise.all(keys.slice(0, limit).map((k) => this.get(k)));
    return items.filter((i): i is BlobItem => i !== null);
  }

  async remove(key: string, version: string): Promise<boolean> {
    const res = await this.call('remove', key, [404, 409, 412], (signal) => this.blob(key).delete({ abortSignal: signal, conditions: { ifMatch: version } }));
    return !('refused' in res);
  }

  async delete(key: string): Promise<void> {
    // A leased blob cannot be deleted without its lease: break it first, as an operator would.
    await this.breakLease(key);
    await this.call('delete', key, [404], (signal) => this.blob(key).delete({ abortSignal: signal }));
  }

  async close(): Promise<void> {}

  /** acquireLease takes the blob lease with a proposed ID, only while the blob's ETag is `ifMatch`. */
  async acquireLease(key: string, leaseId: string, seconds: number, ifMatch: string): Promise<Outcome> {
    const res = await this.call('acquire lease', key, [404, 409, 412], (signal) =>
      this.blob(key).getBlobLeaseClient(leaseId).acquireLease(seconds, { abortSignal: signal, conditions: { ifMatch } }),
    );
    return 'refused' in res ? res : { etag: res.etag! };
  }

  /** renewLease extends the blob lease `leaseId` by its own duration, only while the ETag is `ifMatch`. */
  async renewLease(key: string, leaseId: string, ifMatch: string): Promise<Outcome> {
    const res = await this.call('renew lease', key, [404, 409, 412], (signal) =>
      this.blob(key).getBlobLeaseClient(leaseId).renewLease({ abortSignal: signal, conditions: { ifMatch } }),
    );
    return 'refused' in res ? res : { etag: res.etag! };
  }

  /** changeLease moves the live blob lease `leaseId` to `proposedId` (its expiry kept), only while the ETag is `ifMatch`. */
  async changeLease(key: string, leaseId: string, proposedId: string, ifMatch: string): Promise<Outcome> {
    const res = await this.call('change lease', key, [404, 409, 412], (signal) =>
      this.blob(key).getBlobLeaseClient(leaseId).changeLease(proposedId, { abortSignal: signal, conditions: { ifMatch } }),
    );
    return 'refused' in res ? res : { etag: res.etag! };
  }

  /** releaseLease frees the blob lease `leaseId`; false if it was not held with that ID. */
  async releaseLease(key: string, leaseId: string): Promise<boolean> {
    const res = await this.call('release lease', key, [404, 409, 412], (signal) =>
      this.blob(key).getBlobLeaseClient(leaseId).releaseLease({ abortSignal: signal }),
    );
    return !('refused' in res);
  }

  /** breakLease ends the blob's lease at once (break period 0), only while its ETag is `ifMatch` when given. */
  async breakLease(key: string, ifMatch?: string): Promise<boolean> {
    const res = await this.call('break lease', key, [404, 409, 412], (signal) =>
      this.blob(key).getBlobLeaseClient().breakLease(0, { abortSignal: signal, conditions: ifMatch ? { ifMatch } : undefined }),
    );
    return !('refused' in res);
  }

  private blob(key: string) {
    return this.container.getBlockBlobClient(blobName(this.prefix, key));
  }

  /** call runs one request; a status in `refusals` comes back as a value, anything else throws. */
  private async call<T>(what: string, key: string, refusals: number[], run: (signal: AbortSignal) => Promise<T>): Promise<T | { refused: Failure }> {
    try {
      return await this.bounded(what, key, run);
    } catch (err) {
      const failure = failureOf(err);
      if (refusals.includes(failure.status) && failure.code !== 'ContainerNotFound') return { refused: failure };
      throw err;
    }
  }

  /** bounded runs `run` with an abort signal that fires after the timeout; failures become StoreUnavailableError, keeping the SDK error's status as the cause. */
  private async bounded<T>(what: string, key: string, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
    try {
      return await run(AbortSignal.timeout(this.timeoutMs));
    } catch (err) {
      const failure = failureOf(err);
      if ([404, 409, 412].includes(failure.status) && failure.code !== 'ContainerNotFound') throw err;
      throw describe(what, key, err, failure, this.timeoutMs);
    }
  }
}

/** describe makes the one-line StoreUnavailableError for a failed request (cause: the SDK error). */
function describe(what: string, key: string, err: unknown, failure: Failure, timeoutMs: number): StoreUnavailableError {
  const name = (err as { name?: string } | null)?.name;
  let text: string;
  if (name === 'AbortError' || name === 'TimeoutError') text = `no answer within ${timeoutMs} ms`;
  else if (failure.status === 0) text = oneLine((err as Error)?.message ?? String(err), 200);
  else text = `HTTP ${failure.status}${failure.code ? ` ${failure.code}` : ''}`;
  const error = new StoreUnavailableError(`azblob: ${what} ${key}: ${text}`, { cause: err });
  (error as { failure?: Failure }).failure = failure;
  return error;
}

/** readBody reads a response body to text. */
async function readBody(stream: NodeJS.ReadableStream | undefined, signal: AbortSignal): Promise<string> {
  if (!stream) return '';
  const chunks: Buffer[] = [];
  const onAbort = () => (stream as { destroy?: (e: Error) => void }).destroy?.(Object.assign(new Error('aborted'), { name: 'AbortError' }));
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
  return Buffer.concat(chunks).toString('utf8');
}
