/**
 * nats://… — leases in a NATS JetStream key/value bucket (nats-server 2.9+ with JetStream).
 *
 * Layout (bucket `baton` unless `?bucket=` names another; keys.ts escapes names):
 *
 *   lease.<lock>     the lease record, JSON (kit/record-codec.ts); its KV revision is the
 *                    record's `revision`. Never deleted by baton: a release writes holder null.
 *   term.<lock>      the lock's term counter, a decimal number; never deleted.
 *   ledger.<key>     a ledger entry (job state, the candidate registry); removed only on its revision.
 *
 * The bucket is created if missing with FILE storage, history 1 and no max age. An existing
 * bucket with memory storage or a max age is refused: either would let `term.<lock>` vanish
 * (on a restart, or on the server's timer) and a term be handed out twice.
 *
 * The fencing term lives in `term.<lock>` and is raised by compare-and-set on its KV revision
 * before the lease is written (kit/cas-store.ts). It cannot go back: the counter is never
 * deleted, every write of it is conditional on its last revision, and KV revisions are the
 * bucket stream's sequence numbers, which only grow and survive restarts with file storage.
 * Deleting or purging the bucket itself would start sequences and counters over: don't.
 */
import type { KV, NatsConnection } from 'nats';
import { InvalidConfigError, errorMessage } from '../../core/errors.js';
import { CasStore } from '../kit/cas-store.js';
import { unavailable } from '../kit/errors.js';
import { withTimeout } from '../kit/timeout.js';
import { NatsKvBackend } from './backend.js';
import { CasWriter } from './cas-writer.js';
import { RedialPacer } from './redial.js';
import { DEFAULT_BUCKET, DEFAULT_TIMEOUT_MS, parseNatsUrl, serverList, type NatsConfig } from './config.js';

export { parseNatsUrl, type NatsConfig } from './config.js';

/** NatsStoreOptions: give `url` (baton connects) or `connection` (yours; baton never closes it). */
export interface NatsStoreOptions {
  /** `nats://[user:pass@|token@]host[:port][,…][?bucket=baton&timeout=2s&replicas=1]`, or its parsed form. */
  url?: string | NatsConfig;
  /** A connection the application already has (nats 2.x `NatsConnection`). */
  connection?: NatsConnection;
  /** KV bucket; overrides the URL's. Default `baton`. */
  bucket?: string;
  /** Bound on every call, ms; overrides the URL's. Default 2000. */
  timeoutMs?: number;
}

type NatsSdk = typeof import('nats');

/** The wait between reconnect attempts, and its random extra, ms. */
const RECONNECT_WAIT_MS = 250;
const RECONNECT_JITTER_MS = 100;

async function loadSdk(): Promise<NatsSdk> {
  try {
    return await import('nats');
  } catch (err) {
    throw new InvalidConfigError(`nats: the nats package is not installed (npm install nats): ${errorMessage(err)}`);
  }
}

/**
 * editSubjectPrefix is the subject prefix `kv.update` publishes a key's writes to, with its
 * trailing dot: `$KV.<bucket>.` for a bucket of its own (the client puts a JetStream domain's
 * API prefix or a mirror's origin in front when there is one, so it is asked, not assumed).
 */
function editSubjectPrefix(kv: KV, bucket: string): string {
  const subjectForKey = (kv as { subjectForKey?: (key: string, edit: boolean) => string }).subjectForKey;
  return typeof subjectForKey === 'function' ? subjectForKey.call(kv, '', true) : `$KV.${bucket}.`;
}

/** NatsStore is a LeaseStore on a NATS KV bucket; open one with `NatsStore.open`. */
export class NatsStore extends CasStore {
  /**
   * open connects (unless given a connection), binds the bucket (creating it if missing) and
   * checks its settings. Unreachable → StoreUnavailableError; a bucket that cannot keep terms →
   * InvalidConfigError.
   */
  static async open(options: NatsStoreOptions): Promise<NatsStore> {
    const config = typeof options.url === 'string' ? parseNatsUrl(options.url) : options.url;
    if (!config && !options.connection) throw new InvalidConfigError('nats: give a url or a connection');
    const bucket = options.bucket ?? config?.bucket ?? DEFAULT_BUCKET;
    if (options.bucket !== undefined) parseNatsUrl(`nats://x?bucket=${encodeURIComponent(bucket)}`);
    const timeoutMs = options.timeoutMs ?? config?.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const label = config?.label ?? 'connection';
    const sdk = await loadSdk();
    let nc = options.connection;
    const owns = !nc;
    // Only a connection baton makes gets the monotonic pacing; an application's keeps its own.
    const pacer = owns ? new RedialPacer(RECONNECT_WAIT_MS, RECONNECT_JITTER_MS) : undefined;
    try {
      nc ??= await sdk.connect({
        servers: serverList(config!.servers),
        ...(config!.user !== undefined ? { user: config!.user, pass: config!.pass } : {}),
        ...(config!.token !== undefined ? { token: config!.token } : {}),
        name: 'baton',
        timeout: Math.max(timeoutMs, 1_000),
        reconnect: true,
        maxReconnectAttempts: -1,
        reconnectTimeWait: RECONNECT_WAIT_MS,
        reconnectJitter: RECONNECT_JITTER_MS,
        // The client's own pacing reads the wall clock and stalls after a step back (redial.ts).
        reconnectDelayHandler: () => pacer!.delay(),
        // A frozen server is noticed within a few seconds (two unanswered pings).
        pingInterval: Math.max(timeoutMs, 1_000),
        maxPingOut: 2,
        // Else the client captures a stack (an Error) per request and builds its timeout error
        // up front, only to lengthen a failure's stack; baton's errors are one line anyway.
        noAsyncTraces: true,
      });
      // Binding (or creating) the bucket may take longer than a call on a busy server; every
      // later call is bounded by timeoutMs in backend.ts.
      const setupMs = Math.max(timeoutMs * 3, 5_000);
      const js = nc.jetstream({ timeout: setupMs });
      const kv = await withTimeout(
        'nats',
        `bucket ${bucket}`,
        setupMs,
        js.views.kv(bucket, { history: 1, storage: sdk.StorageType.File, replicas: config?.replicas ?? 1, timeout: setupMs }),
      );
      const status = await withTimeout('nats', `bucket ${bucket}`, setupMs, kv.status());
      const stream = status.streamInfo.config;
      if (stream.storage !== sdk.StorageType.File) {
        throw new InvalidConfigError(`nats: bucket "${bucket}" uses ${stream.storage} storage; terms would not survive a server restart (use a file-backed bucket)`);
      }
      if (stream.max_age > 0) {
        throw new InvalidConfigError(`nats: bucket "${bucket}" has a max age (TTL); terms would expire with it (use a bucket without TTL)`);
      }
      const writer = new CasWriter(nc, sdk, editSubjectPrefix(kv, bucket), timeoutMs);
      return new NatsStore(new NatsKvBackend(nc, kv, { timeoutMs, ownsConnection: owns, label, pacer, writer }));
    } catch (err) {
      if (owns) await nc?.close().catch(() => {});
      throw unavailable('nats', err, label);
    }
  }

  private constructor(backend: NatsKvBackend) {
    super(backend);
  }
}
