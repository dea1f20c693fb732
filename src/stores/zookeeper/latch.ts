import { randomUUID } from 'node:crypto';
import { InvalidConfigError } from '../../core/errors.js';
import { HANDOVER_KEYS, asksHandover, type CampaignResult, type LeaseRecord, type LeaseWrite, type WriteResult } from '../../core/store.js';
import type { Entry, EntryRegistry } from './entries.js';
import { encodeWrite, latchPrefix, parseRevision, participants, revisionOf, toRecord, writtenRecord, type Participant, type ZkLayout } from './layout.js';
import { ZK, fixVersion, type ZkModule } from './sdk.js';
import { codeOf, zxidNumber, type ZkSession } from './session.js';

/** Front is the entry at the front of a lock's queue, as read. */
export interface Front {
  readonly participant: Participant;
  readonly path: string;
  readonly holder: string;
  readonly czxid: number;
  readonly record?: { data: Buffer; version: number };
}

/**
 * Latch maps the store contract onto Curator's LeaderLatch protocol (see layout.ts for the nodes):
 *
 * - campaign: one multi creates the candidate's latch node (ephemeral sequential, data = its
 *   id) and baton's record node beside it; the candidate leads iff its sequence is the lowest.
 *   Claiming the front writes the record node (compare-and-set on its version) through the
 *   candidate's own session, so the server has heard that session at or after the claim began.
 * - the fencing token is the latch node's czxid.
 * - renewal and the step-down flag: one multi that checks the latch node still exists and sets
 *   the record node's data on its version.
 * - release: one multi deletes the record node (on its version) and the latch node.
 * - withdraw: a waiting candidate's nodes are deleted.
 */
export class Latch {
  private readonly dirs = new Set<string>();

  constructor(
    private readonly sdk: () => ZkModule,
    private readonly layout: ZkLayout,
    private readonly entries: EntryRegistry,
    /** The session for a lease duration (its timeout is at least that long, or it throws). */
    private readonly sessionFor: (leaseDurationMs: number) => Promise<ZkSession>,
    private readonly base: () => ZkSession,
    /** Told when this handle's entries of `lock` changed (its watch re-targets). */
    private readonly changed: (lock: string) => void,
  ) {}

  /** front reads the lock's front entry (null when nobody is in line). */
  async front(lock: string, session = this.base()): Promise<Front | null> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const ps = await this.line(lock, session);
      const first = ps[0];
      if (!first) return null;
      const f = await this.describe(lock, first, session);
      if (f) return f;
      // It left between the two reads: look again.
    }
    return null;
  }

  async read(lock: string): Promise<LeaseRecord | null> {
    const f = await this.front(lock);
    return f ? toRecord(lock, f.holder, f.czxid, f.record) : null;
  }

  /** line lists the lock's candidates in queue order ([] when the lock's znode does not exist). */
  async line(lock: string, session = this.base()): Promise<Participant[]> {
    const dir = this.layout.lockDir(lock);
    try {
      return participants(await session.call<string[]>(`read "${lock}"`, (c, done) => c.getChildren(dir, undefined, (err, children) => done(err, children))));
    } catch (err) {
      if (codeOf(err) === ZK.NO_NODE) return [];
      throw err;
    }
  }

  /** describe reads one participant's holder id, czxid and baton record; undefined if it is gone. */
  async describe(lock: string, p: Participant, session = this.base()): Promise<Front | undefined> {
    const path = `${this.layout.lockDir(lock)}/${p.name}`;
    const getData = (at: string) =>
      session
        .call<{ data: Buffer; version: number; czxid: number }>(`read "${lock}"`, (c, done) =>
          c.getData(at, undefined, (err, data, stat) => done(err, stat && { data: data ?? Buffer.alloc(0), version: stat.version, czxid: zxidNumber(stat.czxid) })),
        )
        .catch((err) => {
          if (codeOf(err) === ZK.NO_NODE) return undefined;
          throw err;
        });
    // The record first, then the latch node: a release deletes both in one multi, so a latch node
    // read after a missing record is really there (not one half of a release read between them).
    const record = p.uuid ? await getData(this.layout.recordPath(lock, p.uuid)) : undefined;
    const latch = await getData(path);
    if (!latch) return undefined;
    return { participant: p, path, holder: latch.data.toString('utf8'), czxid: latch.czxid, record: record && { data: record.data, version: record.version } };
  }

  /**
   * campaign enqueues `next.holder` (or keeps its place) and claims the front if it is there.
   * An entry already reported as leading is replaced, never handed its term twice.
   */
  campaign(lock: string, next: LeaseWrite): Promise<WriteResult> {
    const identity = next.holder!;
    return this.entries.serial(lock, identity, async () => {
      const session = await this.sessionFor(next.leaseDurationMs);
      let e = this.entries.get(lock, identity);
      if (e && (e.state === 'leading' || e.session !== session || e.generation !== session.generation)) {
        await this.drop(e);
        e = undefined;
      }
      await this.clearSuspects(lock, identity, session);
      for (let attempt = 0; attempt < 2; attempt++) {
        e ??= await this.enlist(lock, identity, next, session);
        // An entry known to be at the front (LockWatch) is claimed without reading the line again.
        if (e.state !== 'first') {
          const ps = await this.line(lock, session);
          const i = ps.findIndex((p) => p.name === e!.name);
          if (i < 0) {
            // Gone: its session expired, or someone deleted it. Queue again.
            this.entries.remove(e);
            e = undefined;
            continue;
          }
          if (i > 0) {
            e.state = 'queued';
            this.changed(lock);
            const f = await this.describe(lock, ps[0]!, session);
            const current = f ? toRecord(lock, f.holder, f.czxid, f.record) : undefined;
            // A front that asks a handover: who waits behind it, in order (directed handover).
            if (!asksHandover(current)) return { ok: false, current };
            return { ok: false, current, waiting: await this.holders(lock, ps.slice(1), session) };
          }
        }
        const claimed = await this.claim(e, next);
        if (claimed) return claimed;
        await this.drop(e);
        e = undefined;
      }
      return { ok: false, current: undefined };
    });
  }

  /** holders reads the holder ids of participants `ps` (their latch nodes' data), skipping any gone. */
  private async holders(lock: string, ps: readonly Participant[], session: ZkSession): Promise<string[]> {
    const dir = this.layout.lockDir(lock);
    const ids = await Promise.all(
      ps.map((p) =>
        session
          .call<Buffer | undefined>(`read "${lock}"`, (c, done) => c.getData(`${dir}/${p.name}`, undefined, (err, data) => done(err, data ?? Buffer.alloc(0))))
          .catch((err) => {
            if (codeOf(err) === ZK.NO_NODE) return undefined;
            throw err;
          }),
      ),
    );
    return ids.flatMap((d) => (d ? [d.toString('utf8')] : []));
  }

  /**
   * requeue moves `next.holder`'s waiting entry of `lock` to the back of the line (directed
   * handover, core/handover.ts): its nodes are deleted and it campaigns again, with new ones.
   */
  async requeue(lock: string, next: LeaseWrite): Promise<CampaignResult> {
    await this.withdraw(lock, next.holder!);
    return this.campaign(lock, next);
  }

  /**
   * claim writes the front entry's record (on its version) in a multi that checks its latch node
   * still exists, and reports it leading; undefined if either node is gone. The write is the
   * anchor of the leader's deadline: a write answered through the entry's session was heard by
   * the ensemble's leader after the campaign began, so the session (timeout ≥ leaseDurationMs)
   * and its nodes outlive the deadline. A read or a ping is answered by the member the client
   * is connected to, which does not show that the leader heard the session (docs/history/performance.md).
   */
  private async claim(e: Entry, next: LeaseWrite): Promise<WriteResult | undefined> {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const version = e.recordVersion;
        const results = await e.session.call<{ stat?: { version: number } }[]>(`campaign "${e.lock}"`, (c, done) =>
          fixVersion(c.transaction().check(e.path, -1).setData(e.recordPath, encodeWrite(next, e.czxid), version), version).commit((err, res) => done(err, res)),
        );
        const stat = results[1]?.stat;
        if (!stat) throw new Error(`zookeeper: campaign "${e.lock}": the multi answered without the record's new version`);
        e.recordVersion = stat.version;
        e.state = 'leading';
        this.changed(e.lock);
        return { ok: true, record: writtenRecord(e.lock, next, e.czxid, stat.version) };
      } catch (err) {
        const code = codeOf(err);
        if (code === ZK.NO_NODE) return undefined;
        if (code !== ZK.BAD_VERSION) throw err;
        // Someone wrote our record while we waited (a step-down flag): claim over its version.
        const f = await this.describe(e.lock, { name: e.name, seq: 0, uuid: e.uuid }, e.session);
        if (!f?.record) return undefined;
        e.recordVersion = f.record.version;
      }
    }
    return undefined;
  }

  /** enlist creates the latch node and the record node in one multi. */
  private async enlist(lock: string, identity: string, next: LeaseWrite, session: ZkSession): Promise<Entry> {
    const uuid = randomUUID();
    const dir = this.layout.lockDir(lock);
    const recordPath = this.layout.recordPath(lock, uuid);
    const open = this.sdk().ACL.OPEN_ACL_UNSAFE;
    for (let attempt = 0; ; attempt++) {
      await this.ensureDirs(lock, session);
      const generation = session.generation;
      let results;
      try {
        this.entries.suspect(lock, identity, uuid);
        results = await session.call<{ path?: string }[]>(`campaign "${lock}"`, (c, done) =>
          c
            .transaction()
            .create(`${dir}/${latchPrefix(uuid)}`, Buffer.from(identity, 'utf8'), open, ZK.EPHEMERAL_SEQUENTIAL)
            .create(recordPath, encodeWrite(next), open, ZK.EPHEMERAL)
            .commit((err, res) => done(err, res)),
        );
      } catch (err) {
        if (codeOf(err) === ZK.NO_NODE && attempt === 0) {
          // The lock's znode was deleted (an operator, or a recipe cleaning up): make it again.
          this.entries.cleared(lock, identity, [uuid]);
          this.dirs.delete(lock);
          continue;
        }
        if (codeOf(err) !== undefined) this.entries.cleared(lock, identity, [uuid]);
        throw err;
      }
      this.entries.cleared(lock, identity, [uuid]);
      const path = results[0]!.path!;
      const stat = await session.call<{ czxid: Buffer }>(`campaign "${lock}"`, (c, done) => c.exists(path, undefined, (err, s) => done(err, s ?? undefined)));
      if (!stat) throw new Error(`zookeeper: campaign "${lock}": the new node vanished at once`);
      const e: Entry = { lock, identity, uuid, name: path.slice(dir.length + 1), path, recordPath, session, generation, czxid: zxidNumber(stat.czxid), recordVersion: 0, state: 'queued' };
      this.entries.add(e);
      return e;
    }
  }

  private async ensureDirs(lock: string, session: ZkSession): Promise<void> {
    if (this.dirs.has(lock)) return;
    for (const dir of [this.layout.lockDir(lock), this.layout.recordDir(lock)]) {
      await session.call<string>(`campaign "${lock}"`, (c, done) => c.mkdirp(dir, done));
    }
    this.dirs.add(lock);
  }

  /** clearSuspects deletes nodes of ours whose create's outcome was unknown (Curator's protection, by uuid). */
  private async clearSuspects(lock: string, identity: string, session: ZkSession): Promise<void> {
    const uuids = this.entries.suspected(lock, identity);
    if (!uuids?.size) return;
    const found = (await this.line(lock, session)).filter((p) => p.uuid && uuids.has(p.uuid));
    for (const p of found) {
      await this.removeQuietly(session, `${this.layout.lockDir(lock)}/${p.name}`);
      await this.removeQuietly(session, this.layout.recordPath(lock, p.uuid!));
    }
    this.entries.cleared(lock, identity, [...uuids]);
  }

  /** drop forgets an entry and deletes its nodes (remembered as suspect until that succeeds). */
  async drop(e: Entry): Promise<void> {
    this.entries.remove(e);
    this.changed(e.lock);
    this.entries.suspect(e.lock, e.identity, e.uuid);
    await this.removeQuietly(e.session, e.path);
    await this.removeQuietly(e.session, e.recordPath);
    this.entries.cleared(e.lock, e.identity, [e.uuid]);
  }

  private async removeQuietly(session: ZkSession, path: string): Promise<void> {
    try {
      await session.call<void>('delete', (c, done) => c.remove(path, -1, done));
    } catch (err) {
      if (codeOf(err) !== ZK.NO_NODE) throw err;
    }
  }

  /** expire deletes a front entry whose record is still at the version seen (see LockWatch.watchForStale). */
  async expire(lock: string, f: Front, session: ZkSession): Promise<void> {
    if (!f.record || !f.participant.uuid) return;
    const version = f.record.version;
    try {
      await session.call('expire', (c, done) =>
        fixVersion(c.transaction().remove(this.layout.recordPath(lock, f.participant.uuid!), version), version)
          .remove(f.path, -1)
          .commit((err) => done(err)),
      );
    } catch (err) {
      const code = codeOf(err);
      if (code !== ZK.BAD_VERSION && code !== ZK.NO_NODE) throw err;
    }
  }

  /** withdraw drops `holder`'s waiting entry of `lock` on this handle; a leader is left alone. */
  withdraw(lock: string, holder: string): Promise<void> {
    return this.entries.serial(lock, holder, async () => {
      const e = this.entries.get(lock, holder);
      if (e && e.state !== 'leading') await this.drop(e);
    });
  }

  /** update is a write without a new term on the front entry: a renewal, the step-down flag, or a release (holder null). */
  async update(lock: string, expected: string, next: LeaseWrite): Promise<WriteResult> {
    const rev = parseRevision(expected);
    if (!rev) return { ok: false, current: await this.read(lock) };
    const own = this.entries.withCzxid(lock, rev.czxid);
    let target: { session: ZkSession; path: string; recordPath: string; holder: string; czxid: number; entry?: Entry };
    if (own?.state === 'leading') {
      target = { session: own.session, path: own.path, recordPath: own.recordPath, holder: own.identity, czxid: own.czxid, entry: own };
    } else {
      // Not ours (e.g. the CLI setting the step-down flag): compare with the front as it is.
      const f = await this.front(lock);
      if (!f || !f.participant.uuid || revisionOf(f.czxid, f.record?.version) !== expected) {
        return { ok: false, current: f ? toRecord(lock, f.holder, f.czxid, f.record) : null };
      }
      target = { session: this.base(), path: f.path, recordPath: this.layout.recordPath(lock, f.participant.uuid), holder: f.holder, czxid: f.czxid };
    }
    if (next.holder !== null && next.holder !== target.holder) return { ok: false, current: await this.read(lock) };
    try {
      if (next.holder === null) {
        await target.session.call('release', (c, done) =>
          fixVersion(c.transaction().remove(target.recordPath, rev.version), rev.version)
            .remove(target.path, -1)
            .commit((err) => done(err)),
        );
        if (target.entry) this.entries.remove(target.entry);
        this.changed(lock);
        return { ok: true, record: released(lock, next, target.czxid) };
      }
      // The latch node is checked in the same multi: an operator deleting it (or an expiry by
      // the waiter behind) ends the leadership even though the record node is separate.
      const results = await target.session.call<{ stat?: { version: number } }[]>(`write "${lock}"`, (c, done) =>
        fixVersion(c.transaction().check(target.path, -1).setData(target.recordPath, encodeWrite(next, target.czxid), rev.version), rev.version).commit((err, res) => done(err, res)),
      );
      const version = results[1]?.stat?.version;
      if (version === undefined) throw new Error(`zookeeper: write "${lock}": the multi answered without the record's new version`);
      if (target.entry) target.entry.recordVersion = version;
      // A handover asked or accepted: the candidate right behind watches the ask node (LockWatch).
      // A leader's renewals carry the ask on unchanged: touched once per change, not per renewal.
      const ask = next.metadata[HANDOVER_KEYS.to] !== undefined ? `${String(next.metadata[HANDOVER_KEYS.to])}|${String(next.metadata[HANDOVER_KEYS.ack] ?? '')}` : undefined;
      if (ask !== undefined && (!target.entry || target.entry.askTouched !== ask)) {
        if (target.entry) target.entry.askTouched = ask;
        // The write has landed: a failed touch must not report it failed. The one right behind
        // then hears of the ask at its next look (its campaign, or the front's stale check).
        await this.touchAsk(lock, target.czxid).catch(() => undefined);
      }
      return { ok: true, record: writtenRecord(lock, next, target.czxid, version) };
    } catch (err) {
      const code = codeOf(err);
      if (code !== ZK.BAD_VERSION && code !== ZK.NO_NODE) throw err;
      const current = await this.read(lock);
      if (target.entry && current?.term !== target.czxid) this.entries.remove(target.entry);
      return { ok: false, current };
    }
  }

  /** touchAsk sets the lock's ask node (making it if needed), which fires the watch of the one right behind the front. */
  private async touchAsk(lock: string, term: number): Promise<void> {
    const path = this.layout.askPath(lock);
    const data = Buffer.from(String(term));
    const session = this.base();
    try {
      await session.call('ask', (c, done) => c.setData(path, data, -1, (err) => done(err)));
    } catch (err) {
      if (codeOf(err) !== ZK.NO_NODE) throw err;
      await session.call<string>('ask', (c, done) => c.mkdirp(path, done));
      await session.call('ask', (c, done) => c.setData(path, data, -1, (e) => done(e)));
    }
  }

  /** checkLease refuses a lease shorter than the session the server granted would bound (see docs/stores/zookeeper.md). */
  static checkLease(session: ZkSession, leaseDurationMs: number): void {
    const granted = session.negotiatedMs;
    if (granted > 0 && granted < leaseDurationMs) {
      throw new InvalidConfigError(
        `zookeeper: the server granted a ${granted} ms session for a ${leaseDurationMs} ms lease; a leader's node could vanish before its deadline (raise the server's maxSessionTimeout or shorten the lease)`,
      );
    }
  }
}

function released(lock: string, next: LeaseWrite, czxid: number): LeaseRecord {
  return Object.freeze({ ...writtenRecord(lock, { ...next, holder: null }, czxid, 0), stepDownRequested: false, revision: `${czxid}:released` });
}
