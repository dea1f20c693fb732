import type { IKeyValue } from 'etcd3';
import type { LeaseRecord } from '../../core/store.js';
import type { KeepAliveStream } from './keepalive.js';

/**
 * CandidateState is where a candidate stands:
 * - `queued`: its key exists (or is being created) behind another; kept alive in the background
 *   while this handle watches the lock (an elector always does), otherwise left to expire.
 * - `first`: its key is known to be the lowest — a linearizable read showed it at the front, or
 *   the watch saw the deletion of the key that such a read showed right ahead of it at the front
 *   (a later key always has a higher create revision, so none can come ahead) — but its elector
 *   has not claimed it yet; no longer kept alive in the background, so an elector that has gone
 *   away cannot hold the lock for longer than one TTL.
 * - `leading`: reported to its elector as acquired; its lease lives only by the elector's
 *   renewals, so a leader that stops renewing really expires on the server.
 */
export type CandidateState = 'queued' | 'first' | 'leading';

/** Candidate is one (lock, identity) campaigning through this store handle: one lease, one key. */
export interface Candidate {
  readonly lock: string;
  readonly identity: string;
  readonly leaseId: string;
  readonly key: string;
  /** TTL the server granted (it may raise small TTLs to its minimum). */
  readonly ttlSeconds: number;
  /** The key's create revision, '0' until the key is known to exist. */
  createRevision: string;
  state: CandidateState;
  /** The record last handed to the elector while leading (renewals compare against it). */
  record?: LeaseRecord;
  /** The candidate's key as last seen (read, or answered by a put of ours), for a claim with no write. */
  kv?: IKeyValue;
  /**
   * Monotonic ms (performance.now()) at which the last refresh of the lease that counts as
   * checked was sent: the lease grant, or the linearizable request that vouched for a keepalive
   * answered TTL > 0 (see KeepAliveStream.vouched). The lease lives at least a TTL past it. Background keepalives (no such request) do not move it.
   */
  checkedAtMs?: number;
  /**
   * The value a claim with no write owes the key (the leader's acquiredAt, transitions, metadata):
   * written by the leader's first renewal, in the txn that checks the key anyway.
   */
  owedValue?: Buffer;
  /**
   * How this candidate reached the front, when the lock's watch saw it: the front key `key` right
   * ahead of it deleted at `revision`, seen at monotonic `atMs`; that key's candidate declared the
   * renew deadline `rdMs` (RevocationGuard).
   */
  frontBy?: { key: string; revision: string; atMs: number; rdMs?: number };
  /** The revision of the front key at which this candidate's elector was last told of a handover asked. */
  askSeen?: string;
  /** Monotonic ms at which the background keepalive is next due (queued only). */
  dueMs: number;
}

/**
 * CandidateRegistry tracks this handle's candidates — one lease per (lock, identity), so two
 * electors sharing a handle are two candidates — and keeps queued ones alive in the background,
 * a third of their TTL apart, all in one pipelined keepalive batch.
 */
export class CandidateRegistry {
  private readonly byLock = new Map<string, Map<string, Candidate>>();
  private readonly byKey = new Map<string, Candidate>();
  /** The candidates in state `queued`: the background keepalive looks at these only. */
  private readonly queued = new Set<Candidate>();
  private readonly serials = new Map<string, Promise<unknown>>();
  private timer?: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly keepalive: KeepAliveStream,
    /** Whether this handle watches `lock` (a queued key is only worth keeping then). */
    private readonly watched: (lock: string) => boolean,
    /** Told when a candidate's lease turned out to be gone. */
    private readonly lost: (candidate: Candidate) => void,
  ) {}

  get(lock: string, identity: string): Candidate | undefined {
    return this.byLock.get(lock)?.get(identity);
  }

  /** withKey finds the candidate owning an etcd key. */
  withKey(key: string | Buffer): Candidate | undefined {
    return this.byKey.get(key.toString());
  }

  ofLock(lock: string): Candidate[] {
    return [...(this.byLock.get(lock)?.values() ?? [])];
  }

  all(): Candidate[] {
    return [...this.byKey.values()];
  }

  add(candidate: Candidate): void {
    let m = this.byLock.get(candidate.lock);
    if (!m) this.byLock.set(candidate.lock, (m = new Map()));
    m.set(candidate.identity, candidate);
    this.byKey.set(candidate.key, candidate);
    this.setState(candidate, candidate.state);
  }

  remove(candidate: Candidate): void {
    const m = this.byLock.get(candidate.lock);
    if (m?.get(candidate.identity) === candidate) m.delete(candidate.identity);
    if (m?.size === 0) this.byLock.delete(candidate.lock);
    if (this.byKey.get(candidate.key) === candidate) this.byKey.delete(candidate.key);
    this.queued.delete(candidate);
  }

  setState(candidate: Candidate, state: CandidateState): void {
    candidate.state = state;
    if (state !== 'queued') {
      this.queued.delete(candidate);
    } else if (this.byKey.get(candidate.key) === candidate) {
      this.queued.add(candidate);
      candidate.dueMs = performance.now() + (candidate.ttlSeconds * 1000) / 3;
      this.reschedule();
    }
  }

  /** serial runs `fn` after any earlier call for the same (lock, identity) has settled. */
  serial<T>(lock: string, identity: string, fn: () => Promise<T>): Promise<T> {
    const id = `${lock}\u0000${identity}`;
    const run = (this.serials.get(id) ?? Promise.resolve()).then(fn, fn);
    const tail = run.catch(() => {});
    this.serials.set(id, tail);
    void tail.then(() => this.serials.get(id) === tail && this.serials.delete(id));
    return run;
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private queuedAndWatched(): Candidate[] {
    const out: Candidate[] = [];
    for (const c of this.queued) if (this.watched(c.lock)) out.push(c);
    return out;
  }

  /**
   * reschedule re-plans the background keepalive (e.g. when a lock becomes watched). It looks
   * only at queued candidates, so the thousands of leaders a handle may hold cost nothing here.
   */
  reschedule(): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    let next = Infinity;
    for (const c of this.queued) if (c.dueMs < next && this.watched(c.lock)) next = c.dueMs;
    if (next === Infinity) return;
    this.timer = setTimeout(() => void this.tick(), Math.max(0, next - performance.now()));
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    this.timer = undefined;
    const now = performance.now();
    const due = this.queuedAndWatched().filter((c) => c.dueMs <= now + 50);
    try {
      const ttls = await this.keepalive.keepAlive(due.map((c) => c.leaseId));
      due.forEach((c, i) => {
        if (ttls[i] === 0) {
          this.remove(c);
          this.lost(c);
        } else if (c.state === 'queued') {
          c.dueMs = performance.now() + (c.ttlSeconds * 1000) / 3;
        }
      });
    } catch {
      // The store is unreachable: try again soon; the candidate's key may expire meanwhile,
      // and its elector will queue again.
      for (const c of due) c.dueMs = performance.now() + 500;
    }
    this.reschedule();
  }
}

/** noteKv keeps `kv` as the candidate's key as last seen, unless an answer seen earlier was newer. */
export function noteKv(c: Candidate, kv: IKeyValue): void {
  if (!c.kv || BigInt(kv.mod_revision) >= BigInt(c.kv.mod_revision)) c.kv = kv;
}
