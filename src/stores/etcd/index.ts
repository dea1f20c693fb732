/**
 * etcd://host:port[,host:port…] — leases as candidates in etcd's own election protocol, so a
 * baton lock and `etcdctl elect` (or Go's `concurrency.Election`) on the same name are one
 * election.
 *
 * Keys (prefix configurable, empty by default):
 *
 *   <prefix><lock>/<lease ID hex>   a candidate; value = JSON {baton:1, holder, leaseDurationMs,
 *                                   acquiredAt, renewedAt, transitions, stepDownRequested,
 *                                   metadata}; attached to the candidate's own lease
 *   <prefix>_baton/ledger/<key>     a ledger entry (plain key, no lease)
 *   <prefix>_baton/present/<lock>/<identity>  a candidate's registry entry, on its lease (presence.ts)
 *   <prefix>_baton/released/<lock>  on a cluster: `r:<key>` after a release, `c:<key>` after a
 *                                   campaign created a key (see RevocationGuard)
 *
 * The leader is the candidate key with the lowest create revision; the fencing token (term) is
 * that create revision. etcd's revision counter is cluster-wide, persisted, and never goes back
 * — across deletes, expiries and restarts — and a later candidate always has a higher one, so
 * terms strictly increase per lock and are never reused. `revision` (the compare-and-set key) is
 * `<create revision>:<mod revision>`, which changes on every write of the key.
 *
 * Leases expire on the server (`serverExpiry`): TTL = leaseDurationMs rounded up to whole
 * seconds (and raised by etcd to its minimum, 2 s with default settings). A leader's lease is
 * refreshed only by its elector's renewals, each a keepalive sent after the renewal started, so
 * the lease outlives the elector's renew deadline. See docs/stores/etcd.md.
 */
import type { Etcd3, IKeyValue } from 'etcd3';
import { InvalidConfigError, StoreClosedError } from '../../core/errors.js';
import type { CampaignOptions, CampaignResult, LeaseQueue, LeaseRecord, LeaseStore, LeaseWrite, RenewRequest, StoreCapabilities, WatchListener, WriteResult } from '../../core/store.js';
import { CandidateRegistry, type Candidate } from './candidates.js';
import { inChunks } from './chunks.js';
import { Rpc, createClient } from './client.js';
import { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_LEDGER_PREFIX, parseEtcdUrl, type EtcdConnection, type EtcdLayoutOptions } from './config.js';
import { Election } from './election.js';
import { KeepAliveStream } from './keepalive.js';
import { KeyLayout, prefixEnd, toRecord } from './keys.js';
import { EtcdLedger } from './ledger.js';
import { EtcdPresence } from './presence.js';
import { Limiter } from './limiter.js';
import { LockWatch } from './lock-watch.js';
import { RevocationGuard } from './revocation-guard.js';
import { WatchHub } from './watch-hub.js';

export { parseEtcdUrl, type EtcdConnection, type EtcdLayoutOptions } from './config.js';

/** EtcdStoreOptions: either a connection (the store builds and owns its client) or a client. */
export type EtcdStoreOptions = EtcdLayoutOptions &
  (
    | { connection: EtcdConnection; client?: undefined }
    /** An existing client (e.g. built with TLS credentials); the store never closes it. */
    | { client: Etcd3; connection?: undefined }
  );

const MAX_TXN_OPS = 128;
const LIST_TXNS_IN_FLIGHT = 4;
/** At most this many lock-watch reads in flight per handle (see Limiter). */
const WATCH_READS_IN_FLIGHT = 64;

/** EtcdStore is a LeaseStore over etcd's election protocol (see the header comment). */
export class EtcdStore implements LeaseStore {
  readonly kind = 'etcd';
  readonly capabilities: StoreCapabilities = Object.freeze({ serverExpiry: true, leaseGranularityMs: 1000 });
  /**
   * watchSeesExpiry: a lock watch hears the leader key's deletion, whether by release or by its
   * lease's expiry, and wakes a queued candidate once it is at the front (LockWatch): standbys
   * send nothing while they wait. A lost watch is read again and re-made by the LockWatch itself.
   */
  readonly watchSeesExpiry = true;
  /** queue: etcd's election is a queue (see Election): candidates campaign here, `write` never acquires. */
  readonly queue: LeaseQueue;
  readonly ledger: EtcdLedger;
  readonly presence: EtcdPresence;
  readonly layout: KeyLayout;
  private readonly rpc: Rpc;
  private readonly ownsClient: boolean;
  private readonly keepalive: KeepAliveStream;
  /** One client per member (several endpoints only; see KeepAliveStream). */
  private readonly members: readonly Rpc[];
  private readonly registry: CandidateRegistry;
  private readonly election: Election;
  /** A new leader waits out a predecessor whose lease ended early (see RevocationGuard). */
  readonly revocationGuard: RevocationGuard;
  private readonly hub: WatchHub;
  private readonly watches = new Map<string, LockWatch>();
  private readonly watchReads = new Limiter(WATCH_READS_IN_FLIGHT);
  private closed = false;

  /**
   * fromUrl opens `etcd://host:port[,host:port…][?…]` (see parseEtcdUrl); as text, several
   * endpoints may be listed in the authority.
   */
  static fromUrl(url: string | URL): EtcdStore {
    const { connection, layout } = parseEtcdUrl(url);
    return new EtcdStore({ connection, ...layout });
  }

  constructor(options: EtcdStoreOptions) {
    const timeout = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    if (!Number.isFinite(timeout) || timeout <= 0) throw new InvalidConfigError(`etcd: callTimeoutMs must be a positive number of ms, not ${timeout}`);
    this.ownsClient = !options.client;
    this.rpc = new Rpc(options.client ?? createClient(options.connection!, timeout), timeout, this.ownsClient);
    this.layout = new KeyLayout(options.prefix ?? '', options.ledgerPrefix ?? DEFAULT_LEDGER_PREFIX);
    // With several endpoints, one client per member as well: a refresh's keepalives must go to
    // the member that answered the request vouching for them (KeepAliveStream.vouched).
    const hosts = options.connection?.hosts ?? [];
    this.members = hosts.length > 1 ? hosts.map((host) => new Rpc(createClient({ ...options.connection!, hosts: [host] }, timeout), timeout, true, host)) : [];
    this.keepalive = new KeepAliveStream(this.rpc, this.members);
    this.registry = new CandidateRegistry(
      this.keepalive,
      (lock) => this.watches.has(lock),
      (c) => this.watches.get(c.lock)?.entryLost(),
    );
    this.revocationGuard = new RevocationGuard(this.rpc, this.layout, options.revocationGuard ?? 'auto');
    this.presence = new EtcdPresence(this.rpc, this.layout, this.registry, () => this.guard());
    this.election = new Election(
      this.rpc,
      this.layout,
      this.registry,
      this.keepalive,
      this.revocationGuard,
      (lock, seen) => this.watches.get(lock)?.refresh(seen),
      (c) => this.presence.opsFor(c),
      (c) => this.presence.announced(c),
    );
    this.hub = new WatchHub(this.rpc);
    this.ledger = new EtcdLedger(this.rpc, this.layout, () => this.guard());
    this.queue = Object.freeze({
      campaign: async (lock: string, candidate: LeaseWrite, options?: CampaignOptions): Promise<CampaignResult> => {
        this.guard();
        if (candidate.holder === null) throw new InvalidConfigError('etcd: a campaign needs a holder');
        return this.election.campaign(lock, candidate, options);
      },
      withdraw: async (lock: string, holder: string): Promise<void> => {
        this.guard();
        return this.election.withdraw(lock, holder);
      },
      requeue: async (lock: string, candidate: LeaseWrite, options?: CampaignOptions): Promise<CampaignResult> => {
        this.guard();
        if (candidate.holder === null) throw new InvalidConfigError('etcd: a campaign needs a holder');
        return this.election.requeue(lock, candidate, options);
      },
    });
  }

  async read(lock: string): Promise<LeaseRecord | null> {
    this.guard();
    return this.election.read(lock);
  }

  /**
   * write is a compare-and-set of the lock's leader key: a renewal, a step-down flag change, or
   * (holder null) a release — each compared with `expected`. It never acquires: a write with
   * `newTerm` is refused with the current leader (candidates enqueue through `queue.campaign`).
   */
  async write(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    this.guard();
    if (next.newTerm) return { ok: false, current: await this.election.read(lock) };
    return this.election.update(lock, expected, next);
  }

  async renewMany(requests: readonly RenewRequest[]): Promise<WriteResult[]> {
    this.guard();
    return this.election.renewMany(requests);
  }

  /** watch tells `listener` when the lock's leader changes (see LockWatch for what is watched). */
  watch(lock: string, listener: WatchListener): () => void {
    this.guard();
    let w = this.watches.get(lock);
    if (!w) {
      this.watches.set(lock, (w = new LockWatch(lock, this.layout, this.election, this.registry, this.hub, this.watchReads)));
      this.registry.reschedule();
    }
    w.add(listener);
    let subscribed = true;
    return () => {
      if (!subscribed) return;
      subscribed = false;
      const lw = this.watches.get(lock);
      if (lw !== w) return;
      if (w.remove(listener)) {
        // Nobody here watches the lock any more: candidates of it still queued would hold a
        // place nobody claims. (A stopping elector withdraws its own; this catches the rest. Its
        // siblings on the handle keep theirs: retiring them made each queue again at once.)
        for (const c of this.registry.ofLock(lock)) if (c.state !== 'leading') void this.election.retire(c);
        w.close();
        this.watches.delete(lock);
      }
    };
  }

  /** list shows each lock's leader under the prefix (keys-only scan, then one read of the leaders). */
  async list(): Promise<LeaseRecord[]> {
    this.guard();
    const start = Buffer.from(this.layout.prefix === '' ? '\0' : this.layout.prefix);
    const end = this.layout.prefix === '' ? Buffer.from([0]) : prefixEnd(start);
    const scan = await this.rpc.call('list', (o) => this.rpc.client.kv.range({ key: start, range_end: end, keys_only: true }, o));
    const leaders = new Map<string, IKeyValue>();
    for (const kv of scan.kvs) {
      const lock = this.layout.lockOf(kv);
      if (!lock) continue;
      const best = leaders.get(lock);
      if (!best || BigInt(kv.create_revision) < BigInt(best.create_revision)) leaders.set(lock, kv);
    }
    const entries = [...leaders];
    // One txn per MAX_TXN_OPS leaders, a few at a time, each under its own deadline.
    const kvs = await inChunks(
      entries,
      async (chunk) => {
        const t = await this.rpc.call('list', (o) => this.rpc.client.kv.txn({ success: chunk.map(([, kv]) => ({ request_range: { key: kv.key } })) }, o));
        return t.responses.map((r) => r.response_range.kvs[0]);
      },
      { size: MAX_TXN_OPS, inFlight: LIST_TXNS_IN_FLIGHT },
    );
    return entries.flatMap(([lock], i) => (kvs[i] ? [toRecord(lock, kvs[i]!)] : [])).sort((a, b) => a.lock.localeCompare(b.lock));
  }

  /**
   * close stops watching, revokes the leases of candidates still queued here, and closes the
   * client if the store built it. Leaders' leases are left to expire: a leader releases through
   * its elector, and one that chose not to (releaseOnStop: false) keeps its lease to the end.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.watches.values()) w.close();
    this.watches.clear();
    this.hub.close();
    this.registry.close();
    await Promise.all(this.registry.all().filter((c: Candidate) => c.state !== 'leading').map((c) => this.election.retire(c)));
    this.keepalive.close();
    if (this.ownsClient) this.rpc.client.close();
    for (const m of this.members) m.client.close();
  }

  private guard(): void {
    if (this.closed) throw new StoreClosedError('etcd');
  }
}
