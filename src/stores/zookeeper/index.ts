/**
 * zk://host:port[,host:port…]/PATH — leases as participants of Apache Curator's LeaderLatch at
 * `PATH/<lock>`, so a baton lock and a Curator LeaderLatch on that path are one election.
 *
 * Nodes (see layout.ts):
 *
 *   PATH/<lock>/_c_<uuid>-latch-<seq>      a candidate; ephemeral sequential; data = holder id
 *   PATH/_baton/records/<lock>/<uuid>      baton's record of it; ephemeral, same session
 *   PATH/_baton/ledger/<key>               a ledger entry (persistent)
 *   PATH/_baton/present/<lock>/<identity>  a candidate's registry entry (ephemeral, presence.ts)
 *
 * The leader is the candidate with the lowest sequence; the fencing token (term) is its latch
 * node's czxid: zxids are ensemble-wide, persisted in the transaction log and strictly
 * increasing, and a node created later has a higher one, so each new leader — always created
 * after the one before it led — has a higher term, across deletions of the lock's znode and
 * restarts. `revision` is `<czxid>:<record version>`.
 *
 * Sessions bound failover: a candidate's nodes live in a session whose timeout is its
 * leaseDurationMs (one session per lease duration on a handle), so a leader cut off from the
 * ensemble loses its node no sooner than leaseDurationMs after the server last heard it — after
 * its elector's own deadline (renewDeadline < leaseDuration, counted from a renewal sent on
 * that same session). See docs/stores/zookeeper.md.
 */
import { InvalidConfigError } from '../../core/errors.js';
import type { CampaignResult, LeaseQueue, LeaseRecord, LeaseStore, LeaseWrite, RenewRequest, StoreCapabilities, WatchListener, WriteResult } from '../../core/store.js';
import { ClosedGuard } from '../kit/guard.js';
import { ListenerRegistry } from '../kit/listeners.js';
import { DEFAULT_CALL_TIMEOUT_MS, checkRoot, parseZkUrl, type ZkConfig } from './config.js';
import { EntryRegistry } from './entries.js';
import { Latch } from './latch.js';
import { ZkLayout, toRecord } from './layout.js';
import { ZkLedger } from './ledger.js';
import { ZkPresence } from './presence.js';
import { LockWatch } from './lock-watch.js';
import { renewBatch } from './renew-batch.js';
import { loadZk, type ZkClient, type ZkModule } from './sdk.js';
import { ZkSession, type SessionEvents } from './session.js';

export { parseZkUrl, type ZkConfig } from './config.js';
export type { ZkClient } from './sdk.js';

/** ZooKeeperStoreOptions: a parsed URL (the store makes its own sessions), or a client of yours. */
export type ZooKeeperStoreOptions =
  | { config: ZkConfig; client?: undefined }
  /**
   * An existing node-zookeeper-client Client (e.g. with auth added); the store never closes it.
   * Its session timeout must be at least every lease duration used with it.
   */
  | { client: ZkClient; root: string; callTimeoutMs?: number; config?: undefined };

/**
 * BASE_SESSION_MS is the timeout of the session used for reads, watches and the ledger before any
 * campaign. It holds no ephemeral node, so its timeout bounds nothing but how often the client
 * pings (a third of it, idle) and how soon a silent connection is dropped (two thirds of it).
 */
const BASE_SESSION_MS = 30_000;

/** ZooKeeperStore is a queue LeaseStore over Curator's LeaderLatch protocol (see the header comment). */
export class ZooKeeperStore implements LeaseStore {
  readonly kind = 'zookeeper';
  readonly capabilities: StoreCapabilities = Object.freeze({ serverExpiry: true });
  readonly queue: LeaseQueue;
  readonly ledger: ZkLedger;
  readonly presence: ZkPresence;
  readonly layout: ZkLayout;
  private readonly guard = new ClosedGuard('zookeeper');
  private readonly connectString: string;
  private readonly callTimeoutMs: number;
  private readonly given?: ZkClient;
  private sdk?: ZkModule;
  private readonly sessions = new Map<number, ZkSession>();
  private baseSession?: ZkSession;
  private readonly entries = new EntryRegistry();
  private readonly latch: Latch;
  private readonly watches = new Map<string, LockWatch>();
  private readonly listeners: ListenerRegistry;

  /** fromUrl opens `zk://host:port[,host:port…][/PATH][?timeout=…]` (see parseZkUrl). */
  static fromUrl(url: string): ZooKeeperStore {
    return new ZooKeeperStore({ config: parseZkUrl(url) });
  }

  constructor(options: ZooKeeperStoreOptions) {
    if (options.client) {
      checkRoot(options.root);
      this.given = options.client;
      this.connectString = '(given client)';
      this.callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
      this.layout = new ZkLayout(options.root);
    } else {
      this.connectString = options.config.connectString;
      this.callTimeoutMs = options.config.callTimeoutMs;
      this.layout = new ZkLayout(options.config.root);
    }
    if (!Number.isFinite(this.callTimeoutMs) || this.callTimeoutMs <= 0) throw new InvalidConfigError(`zookeeper: callTimeoutMs must be a positive number of ms, not ${this.callTimeoutMs}`);
    this.latch = new Latch(
      () => this.sdk!,
      this.layout,
      this.entries,
      (ms) => this.sessionFor(ms),
      () => this.base(),
      (lock) => this.watches.get(lock)?.refresh(),
    );
    this.ledger = new ZkLedger(() => this.sdk!, this.layout, () => this.loaded().then(() => this.base()), () => this.guard.check());
    this.presence = new ZkPresence(() => this.sdk!, this.layout, () => this.loaded().then(() => this.base()), () => this.guard.check());
    this.listeners = new ListenerRegistry((lock) => {
      const w = new LockWatch(lock, this.layout, this.latch, this.entries, () => this.base(), () => this.listeners.emit(lock, undefined));
      this.watches.set(lock, w);
      void this.loaded().then(() => w.refresh(), () => {});
      return () => {
        w.close();
        if (this.watches.get(lock) === w) this.watches.delete(lock);
        // Nobody here watches the lock any more: its waiting entries would hold places nobody claims.
        for (const e of this.entries.ofLock(lock)) if (e.state !== 'leading') void this.latch.drop(e).catch(() => {});
      };
    });
    this.queue = Object.freeze({
      campaign: async (lock: string, candidate: LeaseWrite): Promise<CampaignResult> => {
        this.guard.check();
        if (candidate.holder === null) throw new InvalidConfigError('zookeeper: a campaign needs a holder');
        await this.loaded();
        return this.latch.campaign(lock, candidate);
      },
      withdraw: async (lock: string, holder: string): Promise<void> => {
        this.guard.check();
        await this.loaded();
        return this.latch.withdraw(lock, holder);
      },
      requeue: async (lock: string, candidate: LeaseWrite): Promise<CampaignResult> => {
        this.guard.check();
        if (candidate.holder === null) throw new InvalidConfigError('zookeeper: a campaign needs a holder');
        await this.loaded();
        return this.latch.requeue(lock, candidate);
      },
    });
  }

  /** verify connects (within the call deadline) so an unreachable ensemble fails at open. */
  async verify(): Promise<this> {
    await this.loaded();
    await this.base().ready('connect');
    return this;
  }

  /** localPorts lists the local TCP ports of this handle's connected sessions (which member each is on shows in `stat`). */
  localPorts(): number[] {
    return [...new Set([this.baseSession, ...this.sessions.values()])].flatMap((s) => (s?.localPort ? [s.localPort] : []));
  }

  /**
   * watchSeesExpiry: the lock watch hears every way the entry ahead of a standby can go — a
   * release or session expiry deletes the node it watches, and a baton leader that stopped
   * renewing while its session lives is expired by the waiter right behind it (LockWatch,
   * one stat per lease) — and wakes a standby once it is at the front, so standbys set no
   * timer of their own. A session that goes deaf without a word is dropped by its read
   * timeout (ZkSession). Not with a client the application passes in: baton neither drops nor
   * times its connection, so standbys keep their re-read there.
   */
  get watchSeesExpiry(): boolean {
    return !this.given;
  }

  /** watchLive: watches are heard while the session they are set on is connected. */
  get watchLive(): boolean {
    return !!this.baseSession?.connected;
  }

  async read(lock: string): Promise<LeaseRecord | null> {
    this.guard.check();
    await this.loaded();
    return this.latch.read(lock);
  }

  /**
   * write is a compare-and-set of the front entry's record: a renewal, the step-down flag, or
   * (holder null) a release. It never acquires: a write with `newTerm` is refused with the
   * current leader (candidates enqueue through `queue.campaign`).
   */
  async write(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    this.guard.check();
    await this.loaded();
    if (next.newTerm || expected === null) return { ok: false, current: await this.latch.read(lock) };
    return this.latch.update(lock, expected, next);
  }

  /**
   * renewMany renews this handle's leaders RENEW_CHUNK to a multi (see renewBatch); anything else
   * in the batch is written one by one, pipelined on the session's connection.
   */
  async renewMany(requests: readonly RenewRequest[]): Promise<WriteResult[]> {
    this.guard.check();
    await this.loaded();
    return renewBatch(this.entries, requests, (r) => (r.next.newTerm ? this.write(r.lock, r.expected, r.next) : this.latch.update(r.lock, r.expected, r.next)));
  }

  watch(lock: string, listener: WatchListener): () => void {
    this.guard.check();
    return this.listeners.add(lock, listener);
  }

  /** list shows each lock's front entry under the root. */
  async list(): Promise<LeaseRecord[]> {
    this.guard.check();
    await this.loaded();
    let names: string[];
    try {
      names = await this.base().call<string[]>('list', (c, done) => c.getChildren(this.layout.root, undefined, (err, ch) => done(err, ch)));
    } catch (err) {
      if ((err as { getCode?: () => number }).getCode?.() === -101) return [];
      throw err;
    }
    const locks = names.map((n) => this.layout.lockOfDir(n)).filter((l): l is string => !!l);
    const fronts = await Promise.all(locks.map(async (lock) => [lock, await this.latch.front(lock)] as const));
    return fronts.flatMap(([lock, f]) => (f ? [toRecord(lock, f.holder, f.czxid, f.record)] : [])).sort((a, b) => a.lock.localeCompare(b.lock));
  }

  /**
   * close stops watching and ends the store's sessions: every node of this handle goes at once
   * (a leader's too — its elector has stopped by then; ZooKeeper cannot keep an ephemeral node
   * after its session ends). A given client is left open, with its nodes deleted one by one.
   */
  async close(): Promise<void> {
    if (!this.guard.close()) return;
    this.listeners.clear();
    for (const w of this.watches.values()) w.close();
    this.watches.clear();
    if (this.given) await Promise.all(this.entries.all().map((e) => this.latch.drop(e).catch(() => {})));
    for (const s of this.sessions.values()) s.close();
    this.baseSession?.close();
  }

  private async loaded(): Promise<void> {
    this.sdk ??= await loadZk();
  }

  /** base is the session for reads and watches: the first one made on this handle. */
  private base(): ZkSession {
    if (this.baseSession) return this.baseSession;
    if (this.given) return (this.baseSession = this.newSession(0));
    const first = this.sessions.values().next().value;
    return (this.baseSession = first ?? this.newSession(BASE_SESSION_MS));
  }

  /** sessionFor is the session whose timeout is `leaseDurationMs` (checked against what the server granted). */
  private async sessionFor(leaseDurationMs: number): Promise<ZkSession> {
    let s: ZkSession;
    if (this.given) s = this.base();
    else if (this.baseSession?.requestedMs === leaseDurationMs) s = this.baseSession;
    else s = this.sessions.get(leaseDurationMs) ?? this.newSession(leaseDurationMs);
    await s.ready('campaign');
    Latch.checkLease(s, leaseDurationMs);
    return s;
  }

  private newSession(timeoutMs: number): ZkSession {
    const events: SessionEvents = {
      connected: (session, fresh) => {
        if (session !== this.baseSession) return;
        // Watches set before a new session are gone (on the same session the client set them
        // again), and so are its ephemeral registry entries.
        if (fresh) for (const w of this.watches.values()) w.refresh();
        if (fresh) this.presence.restore();
        this.listeners.emitAll();
      },
      disconnected: (session) => {
        if (session === this.baseSession) this.listeners.emitAll();
      },
      expired: (session) => {
        for (const e of this.entries.all()) if (e.session === session) this.entries.remove(e);
        this.listeners.emitAll();
      },
    };
    const s = new ZkSession(this.sdk!, this.connectString, timeoutMs, this.callTimeoutMs, events, this.given);
    if (!this.given) this.sessions.set(timeoutMs, s);
    return s;
  }
}
