import type { Entry, EntryRegistry } from './entries.js';
import { asksHandover } from '../../core/store.js';
import { participants, toRecord, type Participant, type ZkLayout } from './layout.js';
import { ZK, type ZkStat } from './sdk.js';
import { codeOf, type ZkSession } from './session.js';
import type { Front, Latch } from './latch.js';

/**
 * LockWatch keeps one ZooKeeper watch armed for a lock on this handle (watches are one-shot, so
 * it re-arms after each), chosen by where this handle stands in the lock's line:
 * - a waiting entry watches only its predecessor's node (no herd when the leader goes); when it
 *   reaches the front, the listeners are told (`undefined`): campaign to claim it. When the
 *   read showed the predecessor at the front, its deletion alone puts the entry at the front
 *   (sequence numbers only grow): it is marked `first` and the listeners are told with no read,
 *   and the campaign claims it without reading the line again (Latch.campaign);
 * - directed handover (core/handover.ts): the entry right behind the front also watches the
 *   lock's ask node (touched after each write that asks or accepts a handover) and is told of an
 *   ask already there when it comes right behind; the one two behind also watches the front's
 *   node, whose deletion puts it right behind;
 * - a leading entry watches its own latch node (deleted by a release elsewhere, or expiry) and the
 *   ask node; a step-down flag is seen by the next renewal, whose compare-and-set then fails;
 * - a handle with no entry watches the lock's children and the front's record (every change).
 * An event may come from an older arming (a path no longer watched): it only re-arms, and
 * at worst wakes the listeners once more, which they allow.
 */
export class LockWatch {
  private generation = 0;
  private closed = false;
  private retry?: NodeJS.Timeout;
  /** The front entry's record as first seen here (path and version), and when, on our monotonic clock. */
  private seen?: { key: string; atMs: number };
  private staleTimer?: NodeJS.Timeout;
  /** The front node a waiting entry of ours was right behind, in the read that armed the watch on it. */
  private frontAhead?: { path: string; entry: Entry };
  /** The front record (path@version) whose handover ask the listeners were last told of. */
  private askSeen?: string;

  constructor(
    private readonly lock: string,
    private readonly layout: ZkLayout,
    private readonly latch: Latch,
    private readonly entries: EntryRegistry,
    private readonly session: () => ZkSession,
    private readonly emit: () => void,
  ) {}

  /**
   * The watcher functions are the same on every arming: the client keeps one per (path, kind)
   * and function, so re-arming on a path that has not fired adds nothing.
   */
  private readonly onChange = () => {
    if (this.closed) return;
    this.emit();
    void this.arm();
  };
  private readonly onMove = () => {
    if (!this.closed) void this.arm();
  };
  /**
   * onFrontGone watches the front node when an entry of ours is right behind it. Node paths are
   * never reused (a sequence number and a uuid each), so a deletion of that path, from whichever
   * arming, means what it meant when it was armed: the entry is at the front, if it still exists
   * in the same session — which its claim checks in the same multi as its write.
   */
  private readonly onFrontGone = (event: unknown) => {
    if (this.closed) return;
    const ahead = this.frontAhead;
    const e = ahead?.entry;
    if (ahead && e && isDeletionOf(event, ahead.path) && this.entries.get(this.lock, e.identity) === e && e.state === 'queued') {
      this.frontAhead = undefined;
      e.state = 'first';
      this.emit();
      return;
    }
    void this.arm();
  };

  /** refresh re-arms from scratch (this handle's entries changed, or the connection came back). */
  refresh(): void {
    if (this.closed) return;
    void this.arm();
  }

  close(): void {
    this.closed = true;
    this.generation++;
    if (this.retry) clearTimeout(this.retry);
    if (this.staleTimer) clearTimeout(this.staleTimer);
  }

  /**
   * watchForStale: the waiter right behind a baton leader expires it when its record has not
   * changed for its leaseDurationMs, timed on this process's monotonic clock from when this
   * handle first saw that version — the compare-and-set stores' rule (elector rule 2), applied
   * by the store. A renewal changes the version, so the delete (on that version) fails against
   * a live leader; a leader whose elector stopped renewing, while its process and session live
   * on, goes after its lease, as on etcd. Entries without a baton record (Curator, kazoo) are
   * left to their sessions.
   */
  private async watchForStale(front: Participant, session: ZkSession, live: () => boolean): Promise<void> {
    if (this.staleTimer) clearTimeout(this.staleTimer);
    const f = await this.latch.describe(this.lock, front, session);
    const record = f?.record ? toRecord(this.lock, f.holder, f.czxid, f.record) : undefined;
    // A handover already asked when this entry came right behind: its elector answers it, once per version.
    const askKey = record && asksHandover(record) ? `${f!.path}@${f!.record!.version}` : undefined;
    if (askKey !== undefined && askKey !== this.askSeen && live()) {
      this.askSeen = askKey;
      this.emit();
    }
    const lease = record?.leaseDurationMs ?? 0;
    if (!f?.record || !(lease > 0) || !live()) return;
    await this.judgeStale(f, lease, session, live);
  }

  /**
   * judgeStale expires the front `f` once its record's version has stood for `leaseMs`, or looks
   * again when it would have. The look is one stat of the record (lookAgain), not a read of the
   * line: the line cannot have changed unseen, since a change ahead of us fires our watch.
   */
  private async judgeStale(f: Front, leaseMs: number, session: ZkSession, live: () => boolean): Promise<void> {
    const key = `${f.path}@${f.record!.version}`;
    const now = performance.now();
    if (this.seen?.key !== key) this.seen = { key, atMs: now };
    const dueMs = this.seen.atMs + leaseMs - now;
    if (dueMs <= 0) {
      await this.latch.expire(this.lock, f, session);
      if (live()) void this.arm();
      return;
    }
    this.staleTimer = setTimeout(() => live() && void this.lookAgain(f, leaseMs, session, live), dueMs + 5);
    this.staleTimer.unref();
  }

  /** lookAgain reads the front's record version (one request per lease) and judges again. */
  private async lookAgain(f: Front, leaseMs: number, session: ZkSession, live: () => boolean): Promise<void> {
    try {
      const recordPath = this.layout.recordPath(this.lock, f.participant.uuid!);
      const stat = await session.call<ZkStat | undefined>('watch', (c, done) => c.exists(recordPath, undefined, (err, st) => done(err, st ?? undefined)));
      if (!live()) return;
      if (!stat) return void this.arm();
      await this.judgeStale({ ...f, record: { data: f.record!.data, version: stat.version } }, leaseMs, session, live);
    } catch {
      if (!live()) return;
      this.retry = setTimeout(() => live() && void this.arm(), 500);
      this.retry.unref();
    }
  }

  private async arm(): Promise<void> {
    const gen = ++this.generation;
    if (this.retry) clearTimeout(this.retry);
    const live = () => gen === this.generation && !this.closed;
    const fired = (tell: boolean) => (tell ? this.onChange : this.onMove);
    const session = this.session();
    const dir = this.layout.lockDir(this.lock);
    try {
      const mine = this.entries.ofLock(this.lock);
      const leading = mine.find((e) => e.state === 'leading');
      const waiting = mine.find((e) => e.state === 'queued');
      // An entry at the front not claimed yet: its campaign claims it, then re-arms (changed).
      if (!leading && mine.some((e) => e.state === 'first')) return;
      if (leading) {
        const stat = await session.call('watch', (c, done) => c.exists(leading.path, fired(true), done));
        if (!stat && live()) this.emit();
        // A handover asked or accepted (the ask node is touched): the leader looks at once, not
        // at its next renewal, whose compare-and-set would find the acceptance.
        else if (live()) await session.call('watch', (c, done) => c.exists(this.layout.askPath(this.lock), fired(true), done));
      } else if (waiting) {
        const line = await this.latch.line(this.lock, session);
        if (!live()) return;
        const i = line.findIndex((p) => p.name === waiting.name);
        if (i <= 0) {
          // At the front (or gone): the elector campaigns to claim it (or to queue again).
          if (i === 0) waiting.state = 'first';
          this.emit();
          return;
        }
        const ahead = `${dir}/${line[i - 1]!.name}`;
        if (i === 1) this.frontAhead = { path: ahead, entry: waiting };
        const stat = await session.call('watch', (c, done) => c.exists(ahead, i === 1 ? this.onFrontGone : fired(false), done));
        if (!stat && live()) return void this.arm();
        // Directed handover: right behind the front, hear its asks (the ask node, touched after
        // each); second behind, hear the front go, after which it is right behind.
        if (i === 1 && live()) await session.call('watch', (c, done) => c.exists(this.layout.askPath(this.lock), fired(true), done));
        if (i === 2 && live()) await session.call('watch', (c, done) => c.exists(`${dir}/${line[0]!.name}`, fired(false), done));
        if (i === 1 && live()) await this.watchForStale(line[0]!, session, live);
      } else {
        const children = await session
          .call<string[]>('watch', (c, done) => c.getChildren(dir, fired(true), (err, ch) => done(err, ch)))
          .catch(async (err) => {
            if (codeOf(err) !== ZK.NO_NODE) throw err;
            await session.call('watch', (c, done) => c.exists(dir, fired(true), done));
            return [] as string[];
          });
        const front = participants(children)[0];
        if (front?.uuid && live()) await session.call('watch', (c, done) => c.exists(this.layout.recordPath(this.lock, front.uuid!), fired(true), done));
      }
    } catch {
      // Unreachable: try again shortly (a reconnection re-arms at once too).
      if (!live()) return;
      this.retry = setTimeout(() => live() && void this.arm(), 500);
      this.retry.unref();
    }
  }
}

/** isDeletionOf tells whether a node-zookeeper-client watch event is the deletion of `path`. */
function isDeletionOf(event: unknown, path: string): boolean {
  const ev = event as { name?: string; path?: string } | undefined;
  return ev?.name === 'NODE_DELETED' && ev.path === path;
}
