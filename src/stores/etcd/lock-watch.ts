import type { IEvent, IKeyValue } from 'etcd3';
import { asksHandover, type WatchListener } from '../../core/store.js';
import { noteKv, type Candidate, type CandidateRegistry } from './candidates.js';
import type { CandidatesRead, Election } from './election.js';
import { directCandidates, prefixEnd, revisionOf, toRecord, type KeyLayout } from './keys.js';
import { renewDeadlineOf } from './revocation-guard.js';
import type { Limiter } from './limiter.js';
import type { WatchHub } from './watch-hub.js';

/** What one etcd watch of a LockWatch is for. */
type Target =
  /** The current leader's key: a put (step-down flag) or its deletion changes who leads. */
  | { kind: 'leader'; key: Buffer }
  /**
   * The key just ahead of one of our queued candidates (`behind`): its deletion matters, and if
   * `front` (the read it follows showed that key at the front, so its deletion puts `behind`
   * there) a put that asks a handover too.
   */
  | { kind: 'predecessor'; key: Buffer; behind: Candidate; front: boolean; rdMs?: number }
  /** The lock is free: the first candidate key to appear. */
  | { kind: 'creation'; key: Buffer };

const MAX_BACKOFF_MS = 1000;

/**
 * LockWatch serves every `watch(lock)` listener of one store handle, following etcd's election
 * rule that a waiter watches only its predecessor (no thundering herd):
 *
 * - for each of this handle's queued candidates, the key just ahead of it (the greatest create
 *   revision below its own). If the read showed that key at the front, its deletion puts our
 *   candidate at the front — nothing can be created ahead of it — so it is marked `first` and
 *   the listeners are woken at once, with no read (its elector then claims it with no write:
 *   Election.claim). Otherwise it reads again and either finds a new predecessor or finds its
 *   candidate at the front, and only then wakes the listeners;
 * - directed handover (core/handover.ts): the candidate right behind the front also hears the
 *   front's puts, and is woken once per revision that asks a handover, to answer it; the one two
 *   behind also watches the front's deletion, after which it is right behind (a read re-targets);
 * - with no queued candidate here (or when the leader is this handle's), the current leader key
 *   (puts and deletion), or, when the lock is free, the creation of the first candidate key.
 *
 * Every watch starts at the revision right after the read it follows, so nothing in between is
 * missed. If a watch is lost (stream broken, server restarted) it reads and watches again with
 * backoff, and wakes the listeners once it is back, since something may have changed — unless
 * the lock is led by this handle's own leader with its key unchanged, as with every one of a
 * handle's thousands of held locks after a blip: nothing then changed for any listener, and
 * waking them would make every such leader renew at once, off its schedule.
 *
 * The reads go through the handle's `reads` limiter: after a broken stream every lock watch of
 * the handle reads again, and thousands of reads at once would all miss their deadline.
 */
export class LockWatch {
  private readonly listeners = new Set<WatchListener>();
  private readonly cancels = new Map<string, () => void>();
  /** A retarget is under way: queued for a read slot, or reading, or re-targeting. */
  private running = false;
  /** Its read has been sent: a change from now on may not be in it. */
  private readSent = false;
  private again = false;
  /** A read of the lock handed over by the store (a campaign's), newer than any applied. */
  private fresh?: CandidatesRead;
  /** Revision of the read the current watches follow. */
  private applied = -1n;
  private timer?: NodeJS.Timeout;
  private failures = 0;
  private missed = false;
  private closed = false;

  constructor(
    private readonly lock: string,
    private readonly layout: KeyLayout,
    private readonly election: Election,
    private readonly registry: CandidateRegistry,
    private readonly hub: WatchHub,
    private readonly reads: Limiter,
  ) {}

  get size(): number {
    return this.listeners.size;
  }

  add(listener: WatchListener): void {
    this.listeners.add(listener);
    if (this.listeners.size === 1) this.refresh();
  }

  /** remove drops a listener; returns true when none is left. */
  remove(listener: WatchListener): boolean {
    this.listeners.delete(listener);
    return this.listeners.size === 0;
  }

  /**
   * refresh re-reads the lock and re-targets the watches (coalesced). `seen` is a read of the
   * lock the store made anyway — a campaign's txn reads the lock's candidates — which stands in
   * for a read of its own when it is the newest: a handle starting thousands of electors then
   * reads each lock once, not twice. (A watch from the revision after a read misses nothing
   * after it, however old the read, so a read handed over is as good as one made here.)
   */
  refresh(seen?: CandidatesRead): void {
    if (this.closed) return;
    if (seen && BigInt(seen.revision) > this.applied && (!this.fresh || BigInt(seen.revision) > BigInt(this.fresh.revision))) {
      this.fresh = seen;
    }
    if (this.running) {
      // A read still waiting for its slot will see this change; one already sent may not.
      if (this.readSent) this.again = true;
      return;
    }
    this.running = true;
    void this.retarget()
      .catch(() => this.lost())
      .finally(() => {
        this.running = false;
        if (this.again) {
          this.again = false;
          this.refresh();
        }
      });
  }

  /**
   * entryLost: one of this handle's queued candidates of the lock lost its entry (its lease was
   * gone). Its elector waits for the front with no timer (the store's watchSeesExpiry), so it is
   * woken after the read, as after a lost watch, to queue again.
   */
  entryLost(): void {
    this.missed = true;
    this.refresh();
  }

  /** lost notes that changes may have been missed and reads again after a backoff. */
  private lost(): void {
    this.missed = true;
    this.failures++;
    if (this.timer || this.closed) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.refresh();
      },
      Math.min(MAX_BACKOFF_MS, 100 * 2 ** this.failures),
    );
    this.timer.unref();
  }

  close(): void {
    this.closed = true;
    this.listeners.clear();
    if (this.timer) clearTimeout(this.timer);
    for (const cancel of this.cancels.values()) cancel();
    this.cancels.clear();
  }

  private async retarget(): Promise<void> {
    let read = this.takeFresh();
    if (!read) {
      try {
        this.readSent = false;
        read = await this.reads.run(async () => {
          if (this.closed) return undefined;
          // Handed a newer read while this waited for its slot: no need to read again.
          const fresh = this.takeFresh();
          if (fresh) return fresh;
          this.readSent = true;
          return this.election.candidates(this.lock);
        });
      } catch {
        return this.lost();
      }
    }
    if (!read || this.closed) return;
    const { kvs, revision } = read;
    if (BigInt(revision) > this.applied) this.applied = BigInt(revision);
    if (this.fresh && BigInt(this.fresh.revision) <= this.applied) this.fresh = undefined;
    this.failures = 0;
    let wake = this.missed && !this.ledUnchangedByUs(kvs[0]);
    this.missed = false;
    const targets = new Map<string, Target>();
    // A predecessor's id names whom it is ahead of and whether it was at the front: a watch made
    // for one reading is never taken for another (it is cancelled and made again instead).
    const add = (t: Target) =>
      targets.set(`${t.kind}:${t.key.toString('hex')}${t.kind === 'predecessor' ? `:${t.behind.key}:${t.front}` : ''}`, t);
    let queued = false;
    for (const c of this.registry.ofLock(this.lock)) {
      if (c.state === 'leading') continue;
      const i = kvs.findIndex((kv) => kv.key.toString() === c.key);
      if (i < 0) continue; // not created yet, or already gone
      queued = true;
      noteKv(c, kvs[i]!);
      if (i > 0) {
        const ahead = kvs[i - 1]!;
        add({ kind: 'predecessor', key: ahead.key, behind: c, front: i === 1, rdMs: renewDeadlineOf(ahead) });
        // Right behind a front that asks a handover: its elector answers it (core/handover.ts).
        if (i === 1 && this.newAsk(c, ahead)) wake = true;
        // Second behind: the front's deletion makes it the one right behind (read again then).
        if (i === 2) add({ kind: 'predecessor', key: kvs[0]!.key, behind: c, front: false });
        continue;
      }
      add({ kind: 'leader', key: kvs[0]!.key });
      if (c.state === 'queued') {
        // At the front: its elector must hear of it to claim the lock.
        this.registry.setState(c, 'first');
        wake = true;
      }
    }
    const leader = kvs[0];
    if (!leader) {
      if (!queued) add({ kind: 'creation', key: Buffer.from(this.layout.lockPrefix(this.lock)) });
    } else if (!queued || this.registry.withKey(leader.key)?.state === 'leading') {
      // Also when one of our queued candidates waits behind one of our leaders: that leader's
      // elector must hear of a step-down flag at once.
      add({ kind: 'leader', key: leader.key });
    }
    for (const [id, cancel] of this.cancels) {
      if (!targets.has(id)) {
        cancel();
        this.cancels.delete(id);
      }
    }
    const start = String(BigInt(revision) + 1n);
    for (const [id, target] of targets) {
      if (!this.cancels.has(id)) this.cancels.set(id, this.start(id, target, start));
    }
    if (wake) this.emit(undefined);
  }

  /** takeFresh hands out the read the store gave, if it is newer than the one applied. */
  private takeFresh(): CandidatesRead | undefined {
    const fresh = this.fresh;
    this.fresh = undefined;
    return fresh && BigInt(fresh.revision) > this.applied ? fresh : undefined;
  }

  /**
   * newAsk: `front`, the key right ahead of our candidate `c`, asks a handover at a revision not
   * yet reported to `c`'s elector (each revision is reported once: an acceptance is one too).
   */
  private newAsk(c: Candidate, front: IKeyValue): boolean {
    const revision = revisionOf(front);
    if (c.askSeen === revision || !asksHandover(toRecord(this.lock, front))) return false;
    c.askSeen = revision;
    return true;
  }

  /** ledUnchangedByUs: the leader key is this handle's leader's, at the revision it last knew. */
  private ledUnchangedByUs(leader: IKeyValue | undefined): boolean {
    const own = leader && this.registry.withKey(leader.key);
    return !!own && own.state === 'leading' && own.record?.revision === revisionOf(leader!);
  }

  private start(id: string, target: Target, startRevision: string): () => void {
    return this.hub.watch({
      key: target.key,
      rangeEnd: target.kind === 'creation' ? prefixEnd(target.key) : undefined,
      startRevision,
      // A front's puts matter to the one right behind it (a handover asked); no other predecessor's do.
      onlyDeletes: target.kind === 'predecessor' && !target.front,
      onlyPuts: target.kind === 'creation',
      onEvents: (events) => this.onEvents(target, events),
      onLost: () => {
        if (this.cancels.delete(id)) this.lost();
      },
    });
  }

  private onEvents(target: Target, events: readonly IEvent[]): void {
    if (this.closed) return;
    if (target.kind === 'creation') {
      const prefix = this.layout.lockPrefix(this.lock);
      if (directCandidates(prefix, events.map((e) => e.kv)).length === 0) return; // a nested lock's key
      this.emit(undefined);
      return this.refresh();
    }
    const last = events[events.length - 1]!;
    if (target.kind === 'predecessor' && target.front && events.some((e) => e.type === 'Delete')) {
      // The front key went, and `behind` was right behind it in the read this watch follows
      // (every event here is after that read). If `behind` is still that same candidate, still
      // waiting, it is at the front now; a candidate retired and queued again since is a new
      // object with a new key, and is not matched here. Its elector claims it (Election.claim).
      const c = target.behind;
      if (this.registry.withKey(c.key) === c && c.state === 'queued') {
        // What the revocation guard needs to know whether that key was released (RevocationGuard).
        const deleted = events.find((e) => e.type === 'Delete')!;
        c.frontBy = { key: target.key.toString(), revision: deleted.kv.mod_revision, atMs: performance.now(), ...(target.rdMs !== undefined ? { rdMs: target.rdMs } : {}) };
        this.registry.setState(c, 'first');
        this.emit(undefined);
      }
      return this.refresh();
    }
    if (last.type === 'Delete') {
      if (target.kind === 'leader') this.emit(undefined);
      return this.refresh();
    }
    if (target.kind === 'predecessor') {
      // The front's value changed: a handover asked is answered by the candidate right behind.
      if (this.registry.withKey(target.behind.key) === target.behind && this.newAsk(target.behind, last.kv)) this.emit(undefined);
      return;
    }
    if (target.kind === 'leader') {
      // The leader's value changed (e.g. the step-down flag): deliver it, unless it is one of
      // our own unclaimed candidates: its elector is only told to look (and campaign to claim).
      const own = this.registry.withKey(last.kv.key);
      this.emit(own && own.state !== 'leading' ? undefined : toRecord(this.lock, last.kv));
    }
  }

  private emit(record: ReturnType<typeof toRecord> | undefined): void {
    for (const listener of [...this.listeners]) {
      queueMicrotask(() => {
        if (!this.listeners.has(listener)) return; // unsubscribed meanwhile
        try {
          listener(record);
        } catch {
          // listeners must not throw; one that does cannot stop the others
        }
      });
    }
  }
}
