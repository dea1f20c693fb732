/**
 * AzblobStore keeps baton's leases in an Azure Blob Storage container, one blob per lock, with
 * the blob lease as the server's mutual exclusion. Layout (under the URL's prefix, `baton/`):
 *
 *   lease/<lock>    the lease record (kit/record-codec.ts JSON); metadata `batonlease` = the
 *                   blob lease ID of the acquisition that wrote it. Revision = the blob's ETag.
 *   term/<lock>     the term counter: a number, never deleted, moved by If-Match CAS.
 *   ledger/<key>    ledger entries, If-Match / If-None-Match CAS.
 *
 * Why a CasStore with two methods of its own: the term counter, the ledger, reads and listing
 * are exactly the kit's compare-and-set on ETags (BlobCas is an ordinary CasBackend), but a
 * leased blob can only be written with its lease ID, and the lease must be taken, renewed and
 * released beside each write — so `write` (acquire / keep) is written here, over the same blobs.
 *
 * ## Acquisition (newTerm), in order
 *   1. Read the record and the counter; an ETag other than `expected` is a lost race.
 *   2. Reserve max(counter, record term) + 1 by CAS on the counter (as the kit does): a reserved
 *      number is never handed out twice, and the counter survives the record's deletion.
 *   3. No blob yet: create a free placeholder (If-None-Match: *) so there is something to lease.
 *   4. Acquire the blob lease with a proposed ID (lease.ts), If-Match the ETag of step 1/3. Azure
 *      refuses while another lease is live (409): a lost race. A live *infinite* lease (baton
 *      leases over 60 s) is broken first, If-Match that ETag — see lease.ts. A directed
 *      handover's give (the holder writes its accepted record to the successor) changes the live
 *      lease to the new ID instead (Change Lease, If-Match), since the holder's own lease would
 *      refuse the Acquire until it lapsed.
 *   5. Write the record with its term under the lease (x-ms-lease-id + If-Match). Only now is
 *      the acquisition reported: leadership is never announced before the record says so.
 *
 * ## Renewal, step-down flag, release (keep)
 *   - A write that keeps a holder first renews the blob lease (If-Match `expected`), then writes
 *     the record under it; the ETag changes on every renewal, which is how polling standbys see
 *     a live leader. A renewal Azure refuses because the lease is not ours any more (broken,
 *     taken, released: any 409) is a lost race, `{ ok: false, current }`: the leader steps down
 *     at once instead of retrying until its renew deadline. A 5xx or no answer stays
 *     StoreUnavailableError (retried). Other candidates still wait a whole leaseDuration of
 *     unchanged ETag before they try.
 *   - A release writes `holder: null` under the lease, then releases the blob lease, so a
 *     standby can acquire at once. A lease that already lapsed is released by ETag alone.
 *
 * ## Why two candidates never both lead
 * Leadership starts only after step 5 succeeded, which needs the live blob lease; a leader stops
 * at its renew deadline, before its blob lease can lapse (lease.ts); and every takeover is also a
 * compare-and-set on the ETag the candidate watched stay unchanged for a whole leaseDuration,
 * which each renewal changes. The blob lease and the elector's rule each suffice on their own.
 *
 * There is no change notification in Blob Storage: standbys poll (one GET per retry period).
 */
import type { ContainerClient } from '@azure/storage-blob';
import { InvalidConfigError, StoreClosedError, StoreUnavailableError, errorMessage } from '../../core/errors.js';
import type { LeaseRecord, LeaseWrite, WriteResult } from '../../core/store.js';
import { leaseKey, termKey } from '../kit/backend.js';
import { CasStore } from '../kit/cas-store.js';
import { decodeRecord, encodeRecord, recordOf } from '../kit/record-codec.js';
import { BlobCas, LEASE_ID_METADATA, type BlobItem, type Outcome } from './blobs.js';
import { DEFAULT_PREFIX, DEFAULT_TIMEOUT_MS, type AzblobConfig } from './config.js';
import { blobLeaseSeconds, proposedLeaseId } from './lease.js';
import { containerClientFor, failureOf } from './sdk.js';

/** AzblobOptions open a store on a container client a library user already has. */
export interface AzblobOptions {
  /** Prepended to every blob name. Default `baton/`. */
  prefix?: string;
  /** Deadline of each request, in ms. Default 5000. */
  timeoutMs?: number;
  /** Create the container if it is missing. Default true. */
  createContainer?: boolean;
  /** Check (or create) the container before returning. Default true; false opens without a request. */
  checkContainer?: boolean;
}

/** What this handle knows of a lock's record: its revision, term and blob lease ID. */
interface Known {
  readonly revision: string;
  readonly term: number;
  readonly leaseId?: string;
}

/** AzblobStore: see the file comment. */
export class AzblobStore extends CasStore {
  private readonly blobs: BlobCas;
  private readonly known = new Map<string, Known>();
  private isClosed = false;

  private constructor(blobs: BlobCas) {
    super(blobs);
    this.blobs = blobs;
  }

  /** open connects with a parsed `azblob:` URL, creating the container if the credentials allow. */
  static async open(config: AzblobConfig): Promise<AzblobStore> {
    const container = await containerClientFor(config);
    return AzblobStore.fromContainer(container, { prefix: config.prefix, timeoutMs: config.timeoutMs });
  }

  /**
   * fromContainer opens a store on an existing ContainerClient (from a BlobServiceClient the
   * caller configured: credentials, proxies, retries). The container is created if missing
   * unless `createContainer` is false; a container that cannot be reached throws
   * StoreUnavailableError, refused credentials InvalidConfigError.
   */
  static async fromContainer(container: ContainerClient, options: AzblobOptions = {}): Promise<AzblobStore> {
    const blobs = new BlobCas(container, options.prefix ?? DEFAULT_PREFIX, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    if (options.checkContainer ?? true) await ensureContainer(container, blobs.timeoutMs, options.createContainer ?? true);
    return new AzblobStore(blobs);
  }

  override async write(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    if (this.isClosed) throw new StoreClosedError('azblob');
    if (next.newTerm) return this.acquireBlob(lock, expected, next);
    // Create without a term (only tests do this): no lease yet, the kit's create-if-absent.
    if (expected === null) return super.write(lock, expected, next);
    return this.keepBlob(lock, expected, next);
  }

  override async close(): Promise<void> {
    this.isClosed = true;
    this.known.clear();
    await super.close();
  }

  override async deleteRecord(lock: string): Promise<void> {
    this.known.delete(lock);
    await super.deleteRecord(lock);
  }

  private async acquireBlob(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    const key = leaseKey(lock);
    // 1. The record and the counter, read together.
    const [item, counter] = await Promise.all([this.blobs.get(key), this.blobs.get(termKey(lock))]);
    const current = item ? decodeRecord(lock, item.value, item.version) : null;
    if ((current?.revision ?? null) !== expected) return { ok: false, current };
    // 2. Reserve the next term.
    const counted = counter ? Number(counter.value) : 0;
    const term = Math.max(Number.isSafeInteger(counted) ? counted : 0, current?.term ?? 0) + 1;
    const reserved = counter ? await this.blobs.replace(termKey(lock), counter.version, String(term)) : await this.blobs.create(termKey(lock), String(term));
    if (reserved === null) return { ok: false };
    // 3. Something to lease.
    let etag = expected;
    if (etag === null) {
      etag = await this.blobs.create(key, encodeRecord({ ...next, holder: null, stepDownRequested: false }, 0));
      if (etag === null) return { ok: false };
    }
    // 4. The blob lease.
    const leaseId = leaseIdFor(lock, next, current, item, etag);
    const seconds = blobLeaseSeconds(next.leaseDurationMs);
    // A give (LeaseWrite.givenByHolder) is written by the holder on its own record, whose blob
    // lease is live and would refuse an Acquire for up to 15 s: the lease moves to the
    // successor's ID instead (Change Lease, If-Match the ETag the successor accepted on).
    const given = next.givenByHolder === true && item?.leaseId !== undefined && item.leaseState === 'leased';
    let leased = given ? await this.blobs.changeLease(key, item.leaseId!, leaseId, etag) : await this.acquireLease(key, leaseId, seconds, etag);
    if (given && 'refused' in leased && leased.refused.status === 409) leased = await this.acquireLease(key, leaseId, seconds, etag); // lapsed meanwhile
    if ('refused' in leased && leased.refused.code === 'LeaseAlreadyPresent' && item?.leaseDuration === 'infinite') {
      // Only an infinite lease is broken, and only at the ETag the elector watched go stale.
      if (await this.blobs.breakLease(key, etag)) leased = await this.acquireLease(key, leaseId, seconds, etag);
    }
    if ('refused' in leased) return { ok: false };
    // 5. The record, under the lease, before anyone is told.
    const put = await this.blobs.put(key, encodeRecord(next, term), { leaseId, ifMatch: leased.etag, metadata: { [LEASE_ID_METADATA]: leaseId } });
    if ('refused' in put) return { ok: false };
    return { ok: true, record: this.noteLease(recordOf(lock, next, term, put.etag), leaseId) };
  }

  /** acquireLease retries once, with the same proposed ID, when no answer came: Azure grants an Acquire for the ID that already holds the lease. */
  private async acquireLease(key: string, leaseId: string, seconds: number, ifMatch: string): Promise<Outcome> {
    try {
      return await this.blobs.acquireLease(key, leaseId, seconds, ifMatch);
    } catch (err) {
      if (!(err instanceof StoreUnavailableError) || failureOf(err.cause).status !== 0 || this.isClosed) throw err;
      return this.blobs.acquireLease(key, leaseId, seconds, ifMatch);
    }
  }

  private async keepBlob(lock: string, expected: string, next: LeaseWrite): Promise<WriteResult> {
    const key = leaseKey(lock);
    let known = this.known.get(lock);
    if (known?.revision !== expected) {
      const item = await this.blobs.get(key);
      const current = item ? decodeRecord(lock, item.value, item.version) : null;
      if (!item || item.version !== expected) return { ok: false, current };
      known = { revision: item.version, term: current!.term, leaseId: item.leaseId };
    }
    const { leaseId, term } = known;
    if (leaseId && next.holder !== null) {
      const renewed = await this.blobs.renewLease(key, leaseId, expected);
      if ('refused' in renewed) {
        if (renewed.refused.status === 404) return { ok: false, current: null };
        // 412: the ETag moved. 409: the blob lease is not ours any more — broken (an operator's
        // Break Lease), breaking, released, or another ID's (LeaseIsBrokenAndCannotBeRenewed,
        // LeaseIsBreakingAndCannotBeChanged, LeaseIdMismatchWithLeaseOperation,
        // LeaseNotPresentWithLeaseOperation; 409 on a lease action is only ever the lease's
        // state). Both are lost races, answered with the record as it stands: a broken lease
        // leaves the blob and its ETag as they were, so the elector sees its own record refused
        // at the revision it holds and steps down now, not at its renew deadline.
        this.known.delete(lock);
        return { ok: false, current: await this.currentRecord(lock) };
      }
    }
    const value = encodeRecord(next, term);
    const metadata = leaseId ? { [LEASE_ID_METADATA]: leaseId } : undefined;
    let put = await this.blobs.put(key, value, { ifMatch: expected, leaseId, metadata });
    if ('refused' in put && next.holder === null && put.refused.code === 'LeaseNotPresentWithBlobOperation') {
      // The blob lease lapsed and nobody took it (the ETag still matches): free the record all the same.
      put = await this.blobs.put(key, value, { ifMatch: expected, metadata });
    }
    if ('refused' in put) return { ok: false };
    const record = this.noteLease(recordOf(lock, next, term, put.etag), leaseId);
    // Let a standby acquire at once; if this fails the lease lapses on its own (or, if infinite, is broken by the next acquirer).
    if (leaseId && next.holder === null) await this.blobs.releaseLease(key, leaseId).catch(() => false);
    return { ok: true, record };
  }

  /** currentRecord reads a lock's record for a lost race's answer; undefined if the read fails (the elector reads again). */
  private async currentRecord(lock: string): Promise<LeaseRecord | null | undefined> {
    const item = await this.blobs.get(leaseKey(lock)).catch(() => undefined);
    if (item === undefined) return undefined;
    return item ? decodeRecord(lock, item.value, item.version) : null;
  }

  private noteLease(record: LeaseRecord, leaseId: string | undefined): LeaseRecord {
    if (this.known.size >= 50_000) this.known.clear();
    this.known.set(record.lock, { revision: record.revision, term: record.term, leaseId });
    return record;
  }
}

/**
 * leaseIdFor proposes the acquisition's lease ID. A record this very elector instance wrote
 * (an acquisition whose answer was lost, which the elector takes back at once) keeps the blob
 * lease it already holds; any other acquisition proposes a fresh ID from the ETag (lease.ts).
 */
function leaseIdFor(lock: string, next: LeaseWrite, current: LeaseRecord | null, item: BlobItem | null, etag: string): string {
  const instance = typeof next.metadata.instance === 'string' ? next.metadata.instance : '';
  const ours = instance !== '' && current?.holder === next.holder && current?.metadata.instance === instance && item?.leaseId;
  return ours ? item!.leaseId! : proposedLeaseId(lock, next.holder ?? '', instance, etag);
}

/** ensureContainer creates the container if missing; without the right to create, it must exist already. */
async function ensureContainer(container: ContainerClient, timeoutMs: number, create: boolean): Promise<void> {
  const where = `container "${container.containerName}" at ${container.url.replace(/\?.*$/, '')}`;
  try {
    if (create) {
      try {
        await container.createIfNotExists({ abortSignal: AbortSignal.timeout(timeoutMs) });
        return;
      } catch (err) {
        // A role or SAS that may use blobs but not create containers: fall through to a check.
        if (failureOf(err).code !== 'AuthorizationPermissionMismatch' && failureOf(err).code !== 'AuthorizationFailure') throw err;
      }
    }
    if (!(await container.exists({ abortSignal: AbortSignal.timeout(timeoutMs) }))) {
      throw new InvalidConfigError(`azblob: ${where} does not exist and these credentials cannot create it`);
    }
  } catch (err) {
    if (err instanceof InvalidConfigError) throw err;
    const { status, code } = failureOf(err);
    const name = (err as { name?: string } | null)?.name ?? '';
    if (status === 401 || status === 403 || /Credential|Authentication/.test(name)) {
      throw new InvalidConfigError(`azblob: ${where}: credentials refused (${code || status || name}): ${errorMessage(err).split('\n')[0]}`, { cause: err });
    }
    if (name === 'AbortError' || name === 'TimeoutError') throw new StoreUnavailableError(`azblob: ${where}: no answer within ${timeoutMs} ms`, { cause: err });
    throw new StoreUnavailableError(`azblob: ${where}: ${status ? `HTTP ${status} ${code}` : errorMessage(err).split('\n')[0]}`, { cause: err });
  }
}
