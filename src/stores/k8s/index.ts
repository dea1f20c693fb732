/**
 * k8s://NAMESPACE — leases as coordination.k8s.io/v1 Lease objects, one per lock, readable and
 * contendable by client-go's LeaseLock (the record format is in codec.ts, names in names.ts,
 * how the server and credentials are found in kubeconfig.ts).
 *
 * Compare-and-set is the API server's optimistic concurrency: every write is a PUT carrying the
 * expected metadata.resourceVersion (a 409 Conflict is a lost race, returned as a value), and
 * create-if-absent is a POST (409 AlreadyExists loses). The revision is the resourceVersion.
 *
 * The fencing term lives in two places:
 *   - the Lease's `baton.dev/term` annotation: the term of the acquisition that wrote it;
 *   - a floor Lease `baton.term.<lease name>` (label baton.dev/kind=term) that baton never
 *     deletes and only ever raises: the highest term handed out for that Lease.
 * An acquisition reads the Lease (its resourceVersion must still be the expected one, else it
 * lost), takes term = max(floor, annotation) + 1, raises the floor to it by compare-and-set, and
 * only then writes the Lease conditionally on the expected resourceVersion. So every term
 * written was first recorded in the floor, and any later acquisition reads a floor at least that
 * high: terms strictly increase and are never reused, even if someone deletes the Lease (the
 * floor keeps the count) or deletes the floor (the annotation keeps it). A term whose Lease write
 * then loses is simply skipped. Only deleting both objects resets the count: do not.
 * The Lease also keeps the floor's resourceVersion from its acquisition (`baton.dev/floor-version`):
 * while the floor is still at that version it holds exactly the Lease's term, so the next
 * acquisition raises it with one conditional PUT and no read (a race lost there is lost at
 * once: in a herd of standbys each makes one request, not a read and a retry loop).
 * A client-go candidate that takes the Lease carries the stale annotations along; baton reads
 * its record with the last baton term, and its own next acquisition still counts past it.
 *
 * Expiry is the elector's business (serverExpiry: false), as in client-go: a record unchanged
 * for its leaseDuration, timed on the local clock. Notification: each watched lock has its own
 * watch (watcher.ts); watchLive is false while any of them is down, and the elector polls.
 * There is no batch write in the Kubernetes API, so there is no renewMany.
 */
import { BatonError, InvalidConfigError, StoreClosedError, StoreUnavailableError } from '../../core/errors.js';
import type {
  Ledger,
  LeaseRecord,
  LeaseStore,
  LeaseWrite,
  StoreCapabilities,
  WatchListener,
  WriteResult,
} from '../../core/store.js';
import { KubeClient, statusMessage, type KubeResponse } from './client.js';
import { LABEL_KIND, floorVersionOf, lockOf, termOf, toLease, toRecord, type Lease, type LeaseList } from './codec.js';
import { parseK8sUrl, resolveTuning, validateNamespace, type K8sTuning } from './config.js';
import { resolveConnection, type K8sConnection } from './kubeconfig.js';
import { K8sLedger } from './ledger.js';
import { leaseNameOf, termFloorNameOf } from './names.js';
import { LeaseWatch } from './watcher.js';

/**
 * K8sStoreOptions: `url` (k8s://NAMESPACE?…) and/or tuning; `connection` to use a configured
 * connection instead of the kubeconfig / service-account resolution.
 */
export interface K8sStoreOptions extends Partial<K8sTuning> {
  url?: string | URL;
  connection?: K8sConnection;
  /** Environment for the resolution (KUBECONFIG, KUBERNETES_SERVICE_HOST, HOME); default process.env. */
  env?: NodeJS.ProcessEnv;
  /** The service account directory (default /var/run/secrets/kubernetes.io/serviceaccount). */
  serviceAccountDir?: string;
  /** Background failures (a watch lost). Default: ignored. */
  onError?: (err: BatonError) => void;
}

/** FOR_VERSION: on the floor Lease, the resourceVersion of the Lease it was raised against ("" for a create). */
const FOR_VERSION = 'baton.dev/for-version';

/** K8sStore keeps leases in Kubernetes Lease objects (see the header comment). */
export class K8sStore implements LeaseStore {
  readonly kind = 'k8s';
  readonly capabilities: StoreCapabilities = Object.freeze({ serverExpiry: false });
  readonly tuning: Readonly<K8sTuning>;
  readonly namespace: string;
  readonly ledger: Ledger;
  /** Where the connection came from (for messages). */
  readonly source: string;
  private readonly client: KubeClient;
  private readonly leasesPath: string;
  private readonly onError: (err: BatonError) => void;
  /** A configuration error a watch met (see watch): every later call fails with it. */
  private refused?: InvalidConfigError;
  /** The last object seen per Lease name, so a renewal need not read before its PUT. */
  private readonly seen = new Map<string, Lease>();
  /** Per Lease name, the floor versions this handle last lost to: a refused hint, a floor read (see raiseFloor). */
  private readonly floorsLostTo = new Map<string, { hint?: string; read?: string }>();
  private readonly watches = new Map<string, { watch: LeaseWatch; listeners: Set<WatchListener> }>();
  private closed = false;

  constructor(options: K8sStoreOptions = {}) {
    const { url, connection, env, serviceAccountDir, onError, ...overrides } = options;
    this.tuning = Object.freeze(url !== undefined ? parseK8sUrl(url, overrides) : resolveTuning(overrides));
    const conn = connection ?? resolveConnection({ kubeconfig: this.tuning.kubeconfig, context: this.tuning.context, env, serviceAccountDir });
    if (!conn || typeof conn.server !== 'string' || !/^https?:\/\//.test(conn.server)) {
      throw new InvalidConfigError(`k8s: connection.server must be an https:// URL, got ${String(conn?.server)}`);
    }
    this.namespace = validateNamespace(this.tuning.namespace ?? conn.namespace ?? 'default');
    this.source = conn.source ?? 'the given connection';
    this.client = new KubeClient(conn, this.tuning.requestTimeoutMs);
    this.leasesPath = `/apis/coordination.k8s.io/v1/namespaces/${this.namespace}/leases`;
    this.onError = onError ?? (() => {});
    this.ledger = new K8sLedger((method, path, body) => this.call(method, path, body), this.leasesPath);
  }

  /**
   * verify checks that the server answers and lets us read Leases in the namespace: 401 and 403
   * are InvalidConfigError (credentials, RBAC), no answer is StoreUnavailableError.
   */
  async verify(): Promise<this> {
    const res = await this.call('GET', `${this.leasesPath}/${leaseNameOf('baton.probe')}`);
    if (res.status !== 200 && res.status !== 404) throw this.failure(res, 'GET', 'leases');
    return this;
  }

  async read(lock: string): Promise<LeaseRecord | null> {
    const lease = await this.get(leaseNameOf(lock));
    return lease ? toRecord(lease, lock) : null;
  }

  async write(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    const name = leaseNameOf(lock);
    // 1. The object we write over: the one last seen at the expected version, or read now.
    let base: Lease | undefined;
    if (expected !== null) {
      const cached = this.seen.get(name);
      base = cached?.metadata.resourceVersion === expected ? cached : ((await this.get(name)) ?? undefined);
      if (!base) return { ok: false, current: null };
      if (base.metadata.resourceVersion !== expected) return { ok: false, current: toRecord(base, lock) };
    }
    // 2. The term: kept on a renewal; on an acquisition, recorded in the floor before it is used.
    let term = termOf(base);
    let floorVersion: string | undefined;
    if (next.newTerm) {
      // A create reads the floor anyway: the Lease is read with it (one round trip), so a create
      // that already lost does not raise the floor (a skipped term would make the next claim's
      // floor-version stale).
      let floor: Lease | null | undefined;
      if (!base) {
        let lease: Lease | null;
        [lease, floor] = await Promise.all([this.get(name), this.get(termFloorNameOf(name))]);
        if (lease) return { ok: false, current: toRecord(lease, lock) };
      }
      const raised = await this.raiseFloor(name, lock, base, floor);
      if (raised === undefined) return { ok: false };
      ({ term, floorVersion } = raised);
    }
    // 3. The conditional write itself. leaseTransitions counts changes of holder the way
    //    client-go does (taking the Lease from someone else, or from "", adds one).
    if (next.newTerm && base) {
      const previous = Number(base.spec?.leaseTransitions) > 0 ? Number(base.spec.leaseTransitions) : 0;
      next = { ...next, transitions: (base.spec?.holderIdentity ?? '') === (next.holder ?? '') ? previous : previous + 1 };
    }
    const lease = toLease(name, lock, next, term, base, floorVersion);
    const res = base
      ? await this.call('PUT', `${this.leasesPath}/${name}`, lease)
      : await this.call('POST', this.leasesPath, lease);
    if (res.status === 200 || res.status === 201) {
      const written = res.body as unknown as Lease;
      this.seen.set(name, written);
      const record = toRecord(written, lock);
      this.notifyLocal(name, written);
      return { ok: true, record };
    }
    this.seen.delete(name);
    if (res.status === 409) return { ok: false }; // Conflict or AlreadyExists: lost the race
    if (res.status === 404) return { ok: false, current: null }; // deleted meanwhile
    throw this.failure(res, base ? 'PUT' : 'POST', `leases/${name}`);
  }

  async list(): Promise<LeaseRecord[]> {
    const res = await this.call('GET', this.leasesPath);
    if (res.status !== 200) throw this.failure(res, 'GET', 'leases');
    const list = res.body as unknown as LeaseList;
    return (list.items ?? [])
      .filter((l) => !l.metadata.labels?.[LABEL_KIND])
      .map((l) => toRecord(l, lockOf(l)))
      .sort((a, b) => (a.lock < b.lock ? -1 : a.lock > b.lock ? 1 : 0));
  }

  watch(lock: string, listener: WatchListener): () => void {
    if (this.closed) throw new StoreClosedError('k8s');
    const name = leaseNameOf(lock);
    let entry = this.watches.get(name);
    if (!entry) {
      const listeners = new Set<WatchListener>();
      const watch = new LeaseWatch({
        client: this.client,
        leasesPath: this.leasesPath,
        name,
        watchTimeoutMs: this.tuning.watchTimeoutMs,
        requestTimeoutMs: this.tuning.requestTimeoutMs,
        refused: (res, method) => this.failure(res, method, 'leases'),
        onChange: (lease) => {
          if (lease) this.remember(name, lease);
          this.deliver(name, lease === undefined ? undefined : lease === null ? null : toRecord(lease, lock));
        },
        onError: (err) => {
          const e = err instanceof BatonError ? err : new StoreUnavailableError(`k8s: ${this.client.where}: watch: ${String(err)}`);
          // A watch the server refuses (401, 403: RBAC without list or watch) will never work:
          // the handle's next call fails with it, so the elector and the CLI hear of it at once
          // instead of waiting on a feed that never comes.
          if (e instanceof InvalidConfigError) this.refused ??= e;
          this.onError(e);
        },
      });
      entry = { watch, listeners };
      this.watches.set(name, entry);
      watch.start();
    }
    const e = entry;
    e.listeners.add(listener);
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      e.listeners.delete(listener);
      if (e.listeners.size === 0 && this.watches.get(name) === e) {
        this.watches.delete(name);
        e.watch.stop();
      }
    };
  }

  /** watchLive: false while any watch stream is down (see LeaseStore.watchLive). */
  get watchLive(): boolean {
    for (const { watch } of this.watches.values()) if (!watch.live) return false;
    return true;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const { watch } of this.watches.values()) watch.stop();
    this.watches.clear();
    this.client.close();
  }

  // ---- internals -------------------------------------------------------------------------

  /**
   * raiseFloor records a new term in the floor Lease and returns it with the floor's new
   * resourceVersion: max(floor, lease term) + 1, written by compare-and-set so that two
   * acquisitions never take the same term. Undefined when this acquisition has lost to another
   * one under way: there is no retry (in a herd, each loser's retries cost a read and a write).
   *
   * 1. When `base` names the floor's resourceVersion from its own acquisition (floor-version),
   *    the floor is written at that version without a read: a floor still at it holds exactly
   *    the base's term (that acquisition wrote both), and a floor that moved refuses the write —
   *    usually because another standby just raised it. A refused hint is not used again; the
   *    floor may instead have been raised by an acquisition whose Lease write lost (a skipped
   *    term), so the next attempt reads the floor.
   * 2. Otherwise the floor is read (`read`: already read with the Lease, for a create). It names
   *    the Lease version it was raised against (baton.dev/for-version): raised against the
   *    version we expect, another acquisition from the same state is under way, and we lose
   *    without writing — once per floor version, since that acquisition may have died before
   *    its Lease write. (Not for a create: "" does not tell a concurrent create from one made
   *    before the Lease was deleted.)
   */
  private async raiseFloor(leaseName: string, lock: string, base: Lease | undefined, read?: Lease | null): Promise<{ term: number; floorVersion: string } | undefined> {
    const name = termFloorNameOf(leaseName);
    const hint = floorVersionOf(base);
    const forVersion = base?.metadata.resourceVersion ?? '';
    const lost = this.floorsLostTo.get(leaseName);
    const useHint = hint !== undefined && hint !== lost?.hint;
    const floor = useHint ? undefined : read !== undefined ? read : await this.get(name);
    const floorRv = floor?.metadata.resourceVersion;
    if (base && floor && floorRv !== lost?.read && floor.metadata.annotations?.[FOR_VERSION] === forVersion && termOf(floor) > termOf(base)) {
      this.floorsLostTo.set(leaseName, { ...lost, read: floorRv });
      return undefined;
    }
    const term = (useHint ? termOf(base) : Math.max(termOf(floor), termOf(base))) + 1;
    const body: Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        ...(floor?.metadata ?? {}),
        name,
        ...(useHint ? { resourceVersion: hint } : {}),
        labels: { ...(floor?.metadata.labels ?? {}), [LABEL_KIND]: 'term' },
        annotations: { ...(floor?.metadata.annotations ?? {}), 'baton.dev/lock': lock, 'baton.dev/term': String(term), [FOR_VERSION]: forVersion },
      },
      spec: floor?.spec ?? {},
    };
    const update = useHint || floor !== null;
    const res = update ? await this.call('PUT', `${this.leasesPath}/${name}`, body) : await this.call('POST', this.leasesPath, body);
    if (res.status === 200 || res.status === 201) {
      const version = (res.body as unknown as Lease).metadata?.resourceVersion;
      if (!version) throw new StoreUnavailableError(`k8s: ${this.client.where}: ${update ? 'PUT' : 'POST'} leases/${name}: answer without a resourceVersion`);
      return { term, floorVersion: version };
    }
    if (res.status === 409 || res.status === 404) {
      if (useHint) this.floorsLostTo.set(leaseName, { ...lost, hint });
      return undefined;
    }
    throw this.failure(res, update ? 'PUT' : 'POST', `leases/${name}`);
  }

  private async get(name: string): Promise<Lease | null> {
    const res = await this.call('GET', `${this.leasesPath}/${name}`);
    if (res.status === 404) {
      this.seen.delete(name);
      return null;
    }
    if (res.status !== 200) throw this.failure(res, 'GET', `leases/${name}`);
    const lease = res.body as unknown as Lease;
    this.remember(name, lease);
    return lease;
  }

  private remember(name: string, lease: Lease): void {
    // Only locks: floors are read fresh each time. The map is bounded by the locks in use.
    if (!lease.metadata.labels?.[LABEL_KIND]) this.seen.set(name, lease);
  }

  /** A write of our own is told to this handle's watchers at once (the watch echoes it later). */
  private notifyLocal(name: string, lease: Lease): void {
    if (this.watches.has(name)) this.deliver(name, toRecord(lease, lockOf(lease)));
  }

  private deliver(name: string, record: LeaseRecord | null | undefined): void {
    const entry = this.watches.get(name);
    if (!entry) return;
    for (const listener of [...entry.listeners]) {
      queueMicrotask(() => {
        if (this.closed || !entry.listeners.has(listener)) return;
        try {
          listener(record);
        } catch {
          // listeners must not throw; one that does must not silence the others
        }
      });
    }
  }

  private async call(method: string, path: string, body?: unknown): Promise<KubeResponse> {
    if (this.closed) throw new StoreClosedError('k8s');
    if (this.refused) throw this.refused;
    try {
      return await this.client.request(method, path, body);
    } catch (err) {
      if (this.closed) throw new StoreClosedError('k8s');
      throw err;
    }
  }

  /** failure turns an unexpected answer into a typed error (401/403: credentials or RBAC). */
  private failure(res: KubeResponse, method: string, what: string): BatonError {
    const detail = `k8s: ${this.client.where}: ${method} ${what} in namespace ${this.namespace}: ${res.status} ${statusMessage(res.body)}`;
    if (res.status === 401) return new InvalidConfigError(`${detail} (check the token or certificate in ${this.source})`);
    if (res.status === 403) return new InvalidConfigError(`${detail} (RBAC: the account needs get, list, watch, create and update on leases in ${this.namespace})`);
    // The server refused the object baton built (e.g. holder metadata past the 256 KiB of
    // annotations a Lease may carry): nothing a retry changes.
    if (res.status === 422) return new InvalidConfigError(detail);
    if (res.status === 429) return new StoreUnavailableError(`${detail} (throttled by the API server, still so after its Retry-After)`);
    return new StoreUnavailableError(detail);
  }
}
