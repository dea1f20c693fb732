/**
 * NatsKvBackend is the kit's CasBackend on a NATS JetStream key/value bucket: one KV key per
 * kit key (keys.ts maps the names), the KV revision as the version.
 *
 * - `create` is `kv.create` (the server refuses it unless the key is absent or deleted) and
 *   `replace` is `kv.update(key, value, revision)`, which the server applies only if the key's
 *   last revision is still `revision` (Nats-Expected-Last-Subject-Sequence). A refusal
 *   ("wrong last sequence", API error 10071) is a lost race: null.
 * - A revision is the sequence number of the bucket's stream. It never goes back or repeats
 *   while the stream exists, and with file storage the stream survives server restarts.
 * - `watch` runs one ordered push consumer per watched key (DeliverLastPerSubject: its first
 *   delivery is the key's current value, so nothing written between a read and the watch is
 *   missed). The server is not asked to expire anything: on nats-server 2.9 a key removed by
 *   the bucket's max age is not announced to watchers, so expiry stays the elector's own
 *   observation, as on every compare-and-set store.
 * - While the connection is down `watchLive` is false and every watcher is woken once; after
 *   the client reconnects, every watch is made again (the server may have restarted and lost
 *   its ephemeral consumers) and the new consumer's first delivery wakes the watcher again.
 * - Calls made while disconnected fail at once instead of waiting in the client's reconnect
 *   buffer, so a compare-and-set is not sent long after the elector gave up on it.
 */
import type { KV, KvEntry, NatsConnection, QueuedIterator, Status } from 'nats';
import { StoreUnavailableError } from '../../core/errors.js';
import type { BackendItem, CasBackend, ReplaceItem } from '../kit/backend.js';
import { translated } from '../kit/errors.js';
import { ClosedGuard } from '../kit/guard.js';
import { withTimeout } from '../kit/timeout.js';
import { fromNatsKey, listFilter, toNatsKey } from './keys.js';

/** NatsBackendOptions: the call bound, whether the connection is baton's to close, a label. */
export interface NatsBackendOptions {
  readonly timeoutMs: number;
  readonly ownsConnection: boolean;
  readonly label: string;
}

/** One watched key: its consumer (when running) and its generation (bumped on each restart). */
interface KeyWatch {
  readonly natsKey: string;
  readonly onChange: (item: BackendItem | null | undefined) => void;
  iter?: QueuedIterator<KvEntry>;
  generation: number;
  stopped: boolean;
  retry?: NodeJS.Timeout;
}

/** How long a watch that failed to start waits before the next try. */
const WATCH_RETRY_MS = 500;
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
  private readonly watches = new Set<KeyWatch>();
  /** Watches whose consumer is not running now. */
  private readonly down = new Set<KeyWatch>();
  private readonly status: AsyncIterable<Status> & { stop(): void };

  constructor(private readonly nc: NatsConnection, private readonly kv: KV, private readonly options: NatsBackendOptions) {
    this.connected = !nc.isClosed();
    this.status = nc.status() as AsyncIterable<Status> & { stop(): void };
    void this.followStatus();
    void nc.closed().then(() => this.lost());
  }

  get watchLive(): boolean {
    return this.connected && this.down.size === 0;
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
    return this.conditional('update', () => this.kv.update(toNatsKey(key), encoder.encode(value), revision));
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
    const w: KeyWatch = { natsKey: toNatsKey(key), onChange, generation: 0, stopped: false };
    this.watches.add(w);
    this.down.add(w);
    if (this.connected) void this.runWatch(w, w.generation);
    return () => {
      w.stopped = true;
      clearTimeout(w.retry);
      w.iter?.stop();
      this.watches.delete(w);
      this.down.delete(w);
    };
  }

  async delete(key: string): Promise<void> {
    await this.call('delete', () => this.kv.delete(toNatsKey(key)));
  }

  async close(): Promise<void> {
    if (!this.guard.close()) return;
    for (const w of this.watches) {
      w.stopped = true;
      clearTimeout(w.retry);
      w.iter?.stop();
    }
    this.watches.clear();
    this.down.clear();
    this.status.stop();
    if (this.options.ownsConnection) await this.nc.close().catch(() => {});
  }

  /** call runs one request: refused at once while disconnected, bounded by the timeout, errors translated. */
  private call<T>(what: string, run: () => Promise<T>, timeoutMs = this.options.timeoutMs): Promise<T> {
    this.guard.check();
    if (!this.connected) return Promise.reject(new StoreUnavailableError(`nats: ${this.options.label}: ${what}: not connected (reconnecting)`));
    return translated('nats', what, () => withTimeout('nats', what, timeoutMs, run()));
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
        if (s.type === 'disconnect') this.lost();
        else if (s.type === 'reconnect') this.regained();
      }
    } catch {
      // the status feed ends with the connection; nc.closed() reports that
    }
  }

  /** lost: the connection is down; every watcher hears once that it may have missed changes. */
  private lost(): void {
    if (!this.connected) return;
    this.connected = false;
    for (const w of this.watches) {
      w.generation++;
      clearTimeout(w.retry);
      w.iter?.stop();
      w.iter = undefined;
      this.down.add(w);
      if (!this.guard.closed) w.onChange(undefined);
    }
  }

  /** regained: connected again; every watch is made anew. */
  private regained(): void {
    if (this.guard.closed || this.nc.isClosed()) return;
    this.connected = true;
    for (const w of this.watches) {
      w.generation++;
      clearTimeout(w.retry);
      w.iter?.stop();
      w.iter = undefined;
      this.down.add(w);
      void this.runWatch(w, w.generation);
    }
  }

  /** runWatch starts the consumer of one watch and feeds its deliveries until it ends. */
  private async runWatch(w: KeyWatch, generation: number): Promise<void> {
    const current = () => !w.stopped && !this.guard.closed && w.generation === generation;
    let iter: QueuedIterator<KvEntry>;
    try {
      iter = await withTimeout('nats', 'watch', this.options.timeoutMs, this.kv.watch({ key: w.natsKey }));
    } catch {
      if (current() && this.connected) w.retry = setTimeout(() => current() && void this.runWatch(w, generation), WATCH_RETRY_MS);
      return;
    }
    if (!current()) {
      iter.stop();
      return;
    }
    w.iter = iter;
    this.down.delete(w);
    try {
      for await (const entry of iter) {
        if (!current()) break;
        w.onChange(entry.operation === 'PUT' ? itemOf(fromNatsKey(entry.key), entry) : null);
      }
    } catch {
      // the consumer failed; handled below like an end
    }
    if (!current()) return;
    // The consumer ended without us asking (the server dropped it): wake the watcher, start again.
    w.iter = undefined;
    this.down.add(w);
    w.onChange(undefined);
    w.generation++;
    const next = w.generation;
    w.retry = setTimeout(() => void this.runWatch(w, next), WATCH_RETRY_MS);
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
