/**
 * redis://… and rediss://… — leases on one Redis (7+) primary, ended by the server's own timer.
 *
 * Keys (P is the prefix, default `baton:`; `{lock}` is a hash tag, so all of a lock's keys
 * live in one cluster slot and one script may touch them together):
 *
 *   P{<lock>}:lease    hash {rev, term, holder, step, data}   PX = leaseDurationMs, exists only
 *                      while held; `data` is JSON {leaseDurationMs, acquiredAt, renewedAt,
 *                      transitions, metadata}. Release deletes it; so does the server on expiry.
 *   P{<lock>}:counter  hash {term, rev}   no TTL, never deleted by baton
 *   P{<lock>}:events   pub/sub channel: the new record as a JSON array [rev, term, holder, step,
 *                      data] on every write, renewals included; "null" on release
 *   Pledger:<key>      hash {value, version}   no TTL (job ledgers, the candidate registry; ledger.ts)
 *   Pledger-floor      string: the highest version of a removed ledger entry
 *
 * The fencing token is `counter.term`, bumped by HINCRBY inside the same script that writes the
 * lease (scripts.ts, WRITE_LUA). The counter never expires and is never deleted, so a term is
 * never reissued after a release or an expiry; revisions come from `counter.rev` for the same
 * reason. Across a server restart the counter is exactly as durable as the server's persistence:
 * run the primary with `appendonly yes` and `appendfsync always`, without automatic failover to
 * an asynchronous replica (docs/stores/redis.md explains why).
 *
 * The server expires a lease key PX milliseconds after the write that set it, on its own clock,
 * so `capabilities.serverExpiry` is true: electors never take over a live record. Every
 * renewal is published (`watchSeesRenewals`): the server's timer for a revision started before
 * a standby hears of it, so a standby sends a create-if-absent leaseDuration after the last
 * renewal it heard, and Redis, which expires a key lazily on access, drops the key for that
 * very script. Without it the standby would wait for Redis's active expiry cycle (10 times a
 * second at the default `hz`, so up to ~100 ms late). Keyspace `expired` events stay the net
 * (and the only word for a standby whose claim came a moment early); without them standbys
 * re-read at the expiry they computed (watcher.ts). While the leader lives, a standby sends
 * nothing.
 */
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import { InvalidConfigError, StoreClosedError, errorMessage } from '../../core/errors.js';
import { BoundedCalls } from './calls.js';
import type { LeaseRecord, LeaseStore, LeaseWrite, RenewRequest, RevisionRenewal, StoreCapabilities, WatchListener, WriteResult } from '../../core/store.js';
import { LEASE_FIELDS, decodeHash, decodeWriteReply, encodeData } from './codec.js';
import { RedisLedger, byCodeUnit, globEscape } from './ledger.js';
import { DEFAULT_PREFIX, DEFAULT_TIMEOUT_MS, checkPrefix, clientOptions, parseRedisUrl, reconnectDelay } from './options.js';
import { LuaScript, RENEW_LUA, WRITE_LUA, type ScriptCall } from './scripts.js';
import { RedisWatcher, SUBSCRIBER_KEEPALIVE_MS, type ExpiryEvents } from './watcher.js';

const require = createRequire(import.meta.url);
const writeScript = new LuaScript(WRITE_LUA);
const renewScript = new LuaScript(RENEW_LUA);

/**
 * RENEW_CHUNK is how many leases one RENEW_LUA call renews. The server runs a script without
 * serving anyone else, so 10,000 leases go as 20 calls of a few ms each, in one pipeline.
 */
const RENEW_CHUNK = 500;

/** RedisStoreOptions: give `url` (baton opens its own connection) or `client` (yours). */
export interface RedisStoreOptions {
  /** `redis[s]://[[user]:password@]host[:port][/db][?prefix=baton:&timeout=2s]`. */
  url?: string | URL;
  /**
   * An ioredis client the application already has. baton never closes it, and does not
   * change its settings; see docs/stores/redis.md for the settings that keep a dead server from
   * stalling your own commands. Watching uses `client.duplicate()` with baton's settings.
   */
  client?: Redis;
  /** Key and channel prefix; overrides the URL's `prefix`. Default `baton:`. */
  prefix?: string;
  /** Bound on every operation, in ms; overrides the URL's `timeout`. Default 2000. */
  timeoutMs?: number;
}

/** RedisStore implements the store contract on Redis; see the header comment for its keys. */
export class RedisStore implements LeaseStore {
  readonly kind = 'redis';
  readonly capabilities: StoreCapabilities = Object.freeze({ serverExpiry: true });
  readonly ledger: RedisLedger;
  readonly prefix: string;
  readonly timeoutMs: number;
  /** The server, with any password hidden, for messages. */
  readonly label: string;
  private readonly client: Redis;
  private readonly ownsClient: boolean;
  private readonly calls: BoundedCalls;
  private readonly watcher: RedisWatcher;
  private closed = false;

  constructor(options: RedisStoreOptions) {
    if (!options || (!options.url && !options.client)) throw new InvalidConfigError('redis: give a url (redis://host:port) or an ioredis client');
    const conn = options.client ? undefined : parseRedisUrl(options.url instanceof URL ? options.url : parseUrl(String(options.url)));
    // Everything is checked before a connection is opened, so a bad option leaks none.
    this.prefix = checkPrefix(options.prefix ?? conn?.prefix ?? DEFAULT_PREFIX);
    this.timeoutMs = options.timeoutMs ?? conn?.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!Number.isFinite(this.timeoutMs) || this.timeoutMs < 1) throw new InvalidConfigError(`redis: timeoutMs must be a positive number, got ${this.timeoutMs}`);
    let db: number;
    if (conn) {
      db = conn.db;
      this.label = conn.label;
      this.client = new (loadIoredis())(clientOptions({ ...conn, timeoutMs: this.timeoutMs }));
      this.ownsClient = true;
    } else {
      this.client = options.client!;
      this.ownsClient = false;
      const o = this.client.options ?? {};
      db = Number(o.db ?? 0);
      this.label = `redis://${o.host ?? 'localhost'}:${o.port ?? 6379}/${db}`;
    }
    this.calls = new BoundedCalls(this.client, { label: this.label, timeoutMs: this.timeoutMs, isClosed: () => this.closed });
    if (this.ownsClient) {
      // The 'error' event must always have a listener, or ioredis prints every reconnect failure.
      this.client.on('error', (err: Error) => {
        this.calls.lastError = err;
      });
      this.client.connect().catch(() => {}); // failures surface on use; retryStrategy keeps trying
    }
    this.ledger = new RedisLedger({ client: this.client, keyPrefix: `${this.prefix}ledger:`, floorKey: `${this.prefix}ledger-floor`, run: (what, fn) => this.run(what, fn) });
    this.watcher = new RedisWatcher({
      connect: () =>
        this.client.duplicate({
          lazyConnect: false,
          autoResubscribe: false, // the watcher re-subscribes itself, then tells its listeners
          enableOfflineQueue: false,
          maxRetriesPerRequest: 0,
          autoResendUnfulfilledCommands: false,
          commandTimeout: this.timeoutMs,
          retryStrategy: reconnectDelay,
          keepAlive: SUBSCRIBER_KEEPALIVE_MS,
          connectionName: 'baton-watch',
        }),
      channelOf: (lock) => this.key(lock, 'events'),
      lockOfLeaseKey: (key) => this.lockOfLeaseKey(key),
      expiredChannel: `__keyevent@${db}__:expired`,
      readNotifyConfig: async () => {
        const reply = (await this.run('config', () => this.client.config('GET', 'notify-keyspace-events'))) as string[];
        return reply[1];
      },
    });
  }

  /**
   * verify connects (within the timeout) and checks the server's settings: with `maxmemory`
   * set, `maxmemory-policy` must be `noeviction`, because an evicted lease key ends a lease early
   * and an evicted counter reissues a fencing token. Throws StoreUnavailableError when the
   * server cannot be reached, InvalidConfigError for an unsafe setting. Settings that cannot be
   * read (CONFIG disabled) are not held against the server. `openStore` calls this.
   */
  async verify(): Promise<this> {
    await this.run('connect', () => this.client.ping());
    let config: string[];
    try {
      config = (await this.run('config', () => this.client.config('GET', 'maxmemory*'))) as string[];
    } catch {
      return this; // CONFIG is often renamed or forbidden on managed servers
    }
    const setting = new Map<string, string>();
    for (let i = 0; i + 1 < config.length; i += 2) setting.set(String(config[i]), String(config[i + 1]));
    const policy = setting.get('maxmemory-policy');
    if (setting.get('maxmemory') !== '0' && policy !== undefined && policy !== 'noeviction') {
      throw new InvalidConfigError(
        `redis: ${this.label} may evict keys (maxmemory-policy ${policy} with maxmemory ${setting.get('maxmemory')}); ` +
          'an evicted lease or term counter breaks fencing: set maxmemory-policy noeviction or use a dedicated server',
      );
    }
    return this;
  }

  /** watchLive: false while the subscriber connection is down; see LeaseStore.watchLive. */
  get watchLive(): boolean {
    return this.watcher.live;
  }

  /**
   * watchSeesExpiry: the server was seen publishing `expired` events (see LeaseStore): standbys
   * then wait for the feed alone. Unknown (CONFIG refused) or off, they read at the expiry.
   */
  get watchSeesExpiry(): boolean {
    return this.watcher.expiryEvents === 'enabled';
  }

  /** watchSeesRenewals: every write is published, renewals included (scripts.ts). */
  readonly watchSeesRenewals = true;

  /** expiryEvents tells whether watchers hear of expiries from the server (known once watching). */
  get expiryEvents(): ExpiryEvents {
    return this.watcher.expiryEvents;
  }

  async read(lock: string): Promise<LeaseRecord | null> {
    return this.run('read', async () => decodeHash(lock, await this.client.hmget(this.key(lock, 'lease'), ...LEASE_FIELDS)));
  }

  async write(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    const call = this.writeCall(lock, expected, next);
    return this.run('write', async () => decodeWriteReply(lock, next, await writeScript.run(this.client, call)));
  }

  /** renewMany sends one WRITE_LUA per lease in one pipeline: one round trip, each item atomic. */
  async renewMany(requests: readonly RenewRequest[]): Promise<WriteResult[]> {
    if (requests.length === 0) return [];
    const calls = requests.map((r) => this.writeCall(r.lock, r.expected, r.next));
    return this.run('renewMany', async () => {
      const replies = await writeScript.runMany(this.client, calls);
      return replies.map((reply, i) => decodeWriteReply(requests[i]!.lock, requests[i]!.next, reply));
    });
  }

  /**
   * renewRevisions renews a batch with one RENEW_LUA call per RENEW_CHUNK leases, all in one
   * pipeline (one round trip): revisions in and out, no record encoded or decoded here. All keys
   * of one call are on one server, which a single primary (what this store supports) is.
   */
  async renewRevisions(items: readonly RevisionRenewal[]): Promise<(string | null)[]> {
    if (items.length === 0) return [];
    const calls: ScriptCall[] = [];
    for (let from = 0; from < items.length; from += RENEW_CHUNK) {
      const chunk = items.slice(from, from + RENEW_CHUNK);
      const keys: string[] = [];
      const args: string[] = [];
      for (const it of chunk) {
        const ttl = Math.ceil(it.leaseDurationMs);
        if (!(ttl >= 1 && ttl <= 2 ** 31)) throw new InvalidConfigError(`redis: leaseDurationMs must be a positive number of milliseconds, got ${it.leaseDurationMs}`);
        keys.push(this.key(it.lock, 'lease'), this.key(it.lock, 'counter'));
        args.push(it.expected, Number.isFinite(it.renewedAt) ? String(Math.round(it.renewedAt)) : 'null', String(ttl));
      }
      calls.push({ keys, args });
    }
    return this.run('renewRevisions', async () => {
      const replies = await renewScript.runMany(this.client, calls);
      const out: (string | null)[] = [];
      for (const reply of replies) {
        if (!Array.isArray(reply)) throw new Error(`unexpected script reply ${JSON.stringify(reply)}`);
        for (const rev of reply) out.push(rev === null || rev === undefined ? null : String(rev));
      }
      if (out.length !== items.length) throw new Error(`renewal script answered ${out.length} of ${items.length} leases`);
      return out;
    });
  }

  /** list SCANs for lease keys (never KEYS), then reads them in one pipeline. Held leases only. */
  async list(): Promise<LeaseRecord[]> {
    return this.run('list', async () => {
      const keys = new Set<string>();
      let cursor = '0';
      do {
        const [next, batch] = await this.client.scan(cursor, 'MATCH', `${globEscape(this.prefix)}{*}:lease`, 'COUNT', 1000, 'TYPE', 'hash');
        cursor = next;
        for (const k of batch) keys.add(k);
      } while (cursor !== '0');
      const locks = [...keys].map((k) => this.lockOfLeaseKey(k)).filter((l): l is string => l !== undefined).sort(byCodeUnit);
      if (locks.length === 0) return [];
      const pipeline = this.client.pipeline();
      for (const lock of locks) pipeline.hmget(this.key(lock, 'lease'), ...LEASE_FIELDS);
      const replies = (await pipeline.exec()) ?? [];
      const records: LeaseRecord[] = [];
      replies.forEach(([err, reply], i) => {
        if (err) throw err;
        const record = decodeHash(locks[i]!, reply as (string | null)[]);
        if (record) records.push(record); // expired between SCAN and read
      });
      return records;
    });
  }

  watch(lock: string, listener: WatchListener): () => void {
    if (this.closed) throw new StoreClosedError('redis');
    return this.watcher.watch(lock, listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.watcher.close();
    if (this.ownsClient) this.client.disconnect();
  }

  private writeCall(lock: string, expected: string | null, next: LeaseWrite): ScriptCall {
    const ttl = Math.ceil(next.leaseDurationMs);
    if (next.holder !== null && !(ttl >= 1 && ttl <= 2 ** 31)) {
      throw new InvalidConfigError(`redis: leaseDurationMs must be a positive number of milliseconds, got ${next.leaseDurationMs}`);
    }
    return {
      keys: [this.key(lock, 'lease'), this.key(lock, 'counter')],
      args: [
        expected ?? '',
        next.newTerm ? '1' : '0',
        next.holder ?? '',
        next.holder === null ? '1' : '0',
        next.stepDownRequested ? '1' : '0',
        next.holder === null ? 1 : ttl,
        encodeData(next),
        this.key(lock, 'events'),
      ],
    };
  }

  private key(lock: string, kind: 'lease' | 'counter' | 'events'): string {
    return `${this.prefix}{${lock}}:${kind}`;
  }

  private lockOfLeaseKey(key: string): string | undefined {
    const head = `${this.prefix}{`;
    const tail = '}:lease';
    return key.startsWith(head) && key.endsWith(tail) && key.length > head.length + tail.length ? key.slice(head.length, -tail.length) : undefined;
  }

  private run<T>(what: string, fn: () => Promise<T>): Promise<T> {
    return this.calls.run(what, fn);
  }
}

function loadIoredis(): new (options: object) => Redis {
  try {
    return (require('ioredis') as { Redis: new (options: object) => Redis }).Redis;
  } catch (err) {
    throw new InvalidConfigError(`redis: the ioredis package is not installed (npm install ioredis): ${errorMessage(err)}`);
  }
}

function parseUrl(text: string): URL {
  try {
    return new URL(text);
  } catch {
    throw new InvalidConfigError(`redis: "${text.replace(/:[^:@/]*@/, ':***@')}" is not a valid URL`);
  }
}
