/**
 * NatsKvBackend is the kit's CasBackend on a NATS JetStream key/value bucket: one KV key per
 * kit key (keys.ts maps the names), the KV revision as the version.
 *
 * - `create` is `kv.create` (the server refuses it unless the key is absent or deleted) and
 *   `replace` is the publish `kv.update(key, value, revision)` sends, which the server applies
 *   only if the key's last revision is still `revision` (Nats-Expected-Last-Subject-Sequence),
 *   sent and answered through the handle's CasWriter (cas-writer.ts: one reply subscription,
 *   one timer, none of the client's per-request errors). A refusal ("wrong last sequence",
 *   API error 10071) is a lost race: null.
 * - A revision is the sequence number of the bucket's stream. It never goes back or repeats
 *   while the stream exists, and with file storage the stream survives server restarts.
 * - `watch` listens through one ordered consumer per key family and store handle (feed.ts),
 *   not one per key. The server is not asked to expire anything: on nats-server 2.9 a key
 *   removed by the bucket's max age is not announced to watchers, so expiry stays the elector's
 *   own observation, as on every compare-and-set store.
 * - While the connection is down `watchLive` is false and every watcher is woken once; after
 *   the client reconnects the consumers are made again (the server may have restarted and lost
 *   them), and their first deliveries (each key's last value) wake the watchers again.
 * - Calls made while disconnected fail at once instead of waiting in the client's reconnect
 *   buffer, so a compare-and-set is not sent long after the elector gave up on it.
 */
import type { JetStreamManager, KV, KvEntry, NatsConnection, Status } from 'nats';
import { InvalidConfigError, StoreUnavailableError, errorMessage } from '../../core/errors.js';
import type { BackendItem, CasBackend, ReplaceItem } from '../kit/backend.js';
import { oneLine, translated } from '../kit/errors.js';
import { ClosedGuard } from '../kit/guard.js';
import { withTimeout } from '../kit/timeout.js';
import type { CasWriter } from './cas-writer.js';
import { KeyFeed } from './feed.js';
import type { RedialPacer } from './redial.js';
import { fromNatsKey, listFilter, toNatsKey } from './keys.js';

/** NatsBackendOptions: the call bound, whether the connection is baton's to close, a label, its reconnect pacer. */
export interface NatsBackendOptions {
  readonly timeoutMs: number;
  readonly ownsConnection: boolean;
  readonly label: string;
  /** Told of every dial the client starts; set when baton made the connection (redial.ts). */
  readonly pacer?: RedialPacer;
  /** Sends `replace`; the backend closes it. */
  readonly writer: CasWriter;
}

/** What `remove` uses of the client's bucket beyond the KV interface (public members of its Bucket class). */
interface BucketInternals {
  readonly jsm: JetStreamManager;
  readonly stream: string;
  subjectForKey(key: string): string;
}

/** How many gets of a listing run at once. */
const LIST_PARALLEL = 64;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** NatsKvBackend: see the file comment. */
export class NatsKvBackend implements CasBackend {
  readonly name = 'nats';
  /** Replacements of a batch are pipelined on the one connection; this bounds how many are in flight. */
  readonly maxBatch = 512;
  private readonly guard = new ClosedGuard('nats');
  private connected: boolean;
  /** family filter (`lease.*`) → its feed. */
  private readonly feeds = new Map<string, KeyFeed>();
  private readonly status: AsyncIterable<Status> & { stop(): void };

  constructor(private readonly nc: NatsConnection, private readonly kv: KV, private readonly options: NatsBackendOptions) {
    this.connected = !nc.isClosed();
    this.status = nc.status() as AsyncIterable<Status> & { stop(): void };
    void this.followStatus();
    void nc.closed().then(() => this.lost());
  }

  get watchLive(): boolean {
    if (!this.connected) return false;
    for (const feed of this.feeds.values()) if (!feed.live) return false;
    return true;
  }

  async get(key: string): Promise<BackendItem | null> {
    const entry = await this.call('get', () => this.kv.get(toNatsKey(key)));
    return entry ? itemOf(key, entry) : null;
  }

  async create(key: string, value: string): Promise<string | null> {
    return this.conditional('create', () => this.kv.create(toNatsKey(key), encoder.encode(value)));
  }

  async replace(key: string, version: string, value: string): Promise<string | null> {
    const revision = Number(version);
    // A version this store did not hand out cannot be the key's revision.
    if (!Number.isSafeInteger(revision) || revision < 1) return null;
    this.guard.check();
    if (!this.connected) throw this.notConnected('update');
    // The writer bounds the call by timeoutMs and answers lost races with null itself.
    return this.options.writer.update(toNatsKey(key), encoder.encode(value), revision);
  }

  replaceMany(items: readonly ReplaceItem[]): Promise<(string | null)[]> {
    return Promise.all(items.map((i) => this.replace(i.key, i.version, i.value)));
  }

  async list(prefix: string, limit: number): Promise<BackendItem[]> {
    const keys = await this.call(
      'list',
      async () => {
        const found: string[] = [];
        for await (const natsKey of await this.kv.keys(listFilter(prefix))) {
          const key = fromNatsKey(natsKey);
          if (key.startsWith(prefix)) found.push(key);
        }
        return found;
      },
      this.options.timeoutMs * 5,
    );
    keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const wanted = keys.slice(0, limit);
    const out: BackendItem[] = [];
    for (let i = 0; i < wanted.length; i += LIST_PARALLEL) {
      const items = await Promise.all(wanted.slice(i, i + LIST_PARALLEL).map((k) => this.get(k)));
      // A key deleted between the listing and its read is simply not there any more.
      for (const item of items) if (item) out.push(item);
    }
    return out;
  }

  watch(key: string, onChange: (item: BackendItem | null | undefined) => void): () => void {
    this.guard.check();
    const natsKey = toNatsKey(key);
    const filter = listFilter(key);
    let feed = this.feeds.get(filter);
    if (!feed) this.feeds.set(filter, (feed = new KeyFeed(this.kv, filter, this.options.timeoutMs, () => this.connected && !this.guard.closed)));
    return feed.add(natsKey, onChange);
  }

  /**
   * remove purges the key only while its last revision is `version` (a purge carrying the
   * expected last subject sequence), then drops the purge's own marker from the stream, so a
   * removed key leaves nothing behind. Only messages before the marker's sequence go: a key made
   * again in between keeps its new value. Its new revision is a later stream sequence.
   */
  async remove(key: string, version: string): Promise<boolean> {
    const revision = Number(version);
    if (!Number.isSafeInteger(revision) || revision < 1) return false;
    const natsKey = toNatsKey(key);
    try {
      await this.call('remove', () => this.kv.purge(natsKey, { previousSeq: revision }));
    } catch (err) {
      if (isWrongSequence(err)) return false;
      throw err;
    }
    const bucket = this.kv as unknown as BucketInternals;
    const marker = await this.call('remove', () => this.kv.get(natsKey));
    if (marker && marker.operation !== 'PUT') {
      await this.call('remove', () => bucket.jsm.streams.purge(bucket.stream, { filter: bucket.subjectForKey(natsKey), seq: marker.revision + 1 }));
    }
    return true;
  }

  async delete(key: string): Promise<void> {
    await this.call('delete', () => this.kv.delete(toNatsKey(key)));
  }

  async close(): Promise<void> {
    if (!this.guard.close()) return;
    for (const feed of this.feeds.values()) feed.close();
    this.feeds.clear();
    this.options.writer.close();
    this.status.stop();
    if (this.options.ownsConnection) await this.nc.close().catch(() => {});
  }

  /** call runs one request: refused at once while disconnected, bounded by the timeout, errors translated. */
  private call<T>(what: string, run: () => Promise<T>, timeoutMs = this.options.timeoutMs): Promise<T> {
    this.guard.check();
    if (!this.connected) return Promise.reject(this.notConnected(what));
    return translated('nats', what, () => withTimeout('nats', what, timeoutMs, run().catch((err: unknown) => Promise.reject(refusal(what, err) ?? err))));
  }

  private notConnected(what: string): StoreUnavailableError {
    return new StoreUnavailableError(`nats: ${this.options.label}: ${what}: not connected (reconnecting)`);
  }

  /** conditional runs a create/update; the server's "wrong last sequence" is a lost race (null). */
  private async conditional(what: string, run: () => Promise<number>): Promise<string | null> {
    try {
      return String(await this.call(what, run));
    } catch (err) {
      if (isWrongSequence(err)) return null;
      throw err;
    }
  }

  private async followStatus(): Promise<void> {
    try {
      for await (const s of this.status) {
        if (s.type === 'reconnecting') this.options.pacer?.dialed();
        else if (s.type === 'disconnect') this.lost();
        else if (s.type === 'reconnect') this.regained();
        else if (s.type === 'error') {
          // A publish the user may not make: the writes waiting on it fail with the server's words.
          const ctx = (s as { permissionContext?: { operation?: string; subject?: string } }).permissionContext;
          if (ctx?.operation === 'publish' && ctx.subject) this.options.writer.refused(ctx.subject);
        }
      }
    } catch {
      // the status feed ends with the connection; nc.closed() reports that
    }
  }

  /** lost: the connection is down; every watcher hears once that it may have missed changes. */
  private lost(): void {
    if (!this.connected) return;
    this.connected = false;
    if (!this.guard.closed) for (const feed of this.feeds.values()) feed.down();
  }

  /** regained: connected again; every feed's consumer is made anew. */
  private regained(): void {
    if (this.guard.closed || this.nc.isClosed()) return;
    this.connected = true;
    for (const feed of this.feeds.values()) feed.restart();
  }
}

function itemOf(key: string, entry: KvEntry): BackendItem | null {
  if (entry.operation !== 'PUT') return null;
  return { key, value: decoder.decode(entry.value), version: String(entry.revision) };
}

/** isWrongSequence tells a refused compare-and-set (JetStream API error 10071) from a failure. */
function isWrongSequence(err: unknown): boolean {
  const cause = (err as { cause?: unknown })?.cause ?? err;
  const api = (cause as { api_error?: { err_code?: number } })?.api_error;
  if (api?.err_code === 10071) return true;
  return /wrong last sequence/i.test(String((cause as Error)?.message ?? ''));
}

/**
 * refusal: the server refused `what` for the connection's permissions — one line with its own
 * words, as a configuration error (exit 78; retrying cannot fix it). Undefined for anything else.
 */
function refusal(what: string, err: unknown): InvalidConfigError | undefined {
  if ((err as { code?: unknown } | null)?.code !== 'PERMISSIONS_VIOLATION') return undefined;
  return new InvalidConfigError(`nats: ${what}: ${oneLine(errorMessage(err))} (the server refused: the connection's user lacks that permission)`, { cause: err });
}
