import type { IKeyValue, IRangeRequest } from 'etcd3';
import { StoreUnavailableError } from '../../core/errors.js';
import { asksHandover, type CampaignOptions, type CampaignResult, type LeaseRecord, type LeaseWrite, type RenewRequest, type WriteResult } from '../../core/store.js';
import { noteKv, type Candidate, type CandidateRegistry } from './candidates.js';
import { leaseGone, type Rpc } from './client.js';
import { CHUNK, inChunks } from './chunks.js';
import type { KeepAliveAnswers, KeepAliveStream } from './keepalive.js';
import { directCandidates, encodeValue, parseRevision, prefixEnd, revisionOf, sameStoredMetadata, toRecord, type KeyLayout } from './keys.js';
import { withRenewDeadline, type RevocationGuard } from './revocation-guard.js';

/** MAX_TXN_OPS is etcd's default --max-txn-ops: batches of reads are split into txns this big. */
const MAX_TXN_OPS = 128;

/** CandidatesRead is a lock's candidate keys, oldest first, as of `revision`. */
export interface CandidatesRead {
  kvs: IKeyValue[];
  revision: string;
}

/** RENEW_ATTEMPTS is how many times one chunk of a renewal batch is sent before the batch fails. */
const RENEW_ATTEMPTS = 2;

/** RenewItem is one leader's renewal: the candidate and the renewedAt its elector asked for. */
interface RenewItem {
  c: Candidate;
  renewedAt: number;
}

/**
 * Election maps the store contract onto etcd's own election protocol (the one behind
 * `etcdctl elect` and Go's `concurrency.Election`):
 *
 * - campaign: a candidate puts `<lock>/<lease hex>` with its lease, in a txn that creates the
 *   key only if its create revision is 0; it leads iff its key has the lowest create revision.
 * - claim: a candidate known to be at the front (state `first`) leads with no write — its place
 *   and term were fixed when its key was created — and with no round trip at all when its
 *   lease's last checked refresh is recent enough (see `claim`). The value it queued with is
 *   brought up to date by its first renewal.
 * - the fencing token is the leader key's create revision.
 * - renewal: a txn checking the leader's key, then a keepalive of its lease on the member that
 *   answered the txn (KeepAliveStream.vouched).
 * - step-down flag: the leader key's value is rewritten with the same lease (create revision,
 *   hence term, unchanged; mod revision, hence `revision`, changed).
 * - release: the leader key is deleted in a txn guarded by its revision, then its lease revoked.
 * - withdraw: a waiting candidate's lease is revoked, which deletes its key.
 */
export class Election {
  constructor(
    private readonly rpc: Rpc,
    private readonly layout: KeyLayout,
    private readonly registry: CandidateRegistry,
    private readonly keepalive: KeepAliveStream,
    private readonly guard: RevocationGuard,
    /**
     * Told when this handle's candidates of `lock` changed (the lock's watch re-targets), with
     * the lock's candidates as just read, when the change came with such a read.
     */
    private readonly changed: (lock: string, seen?: CandidatesRead) => void,
    /** The extra puts a campaign txn of a candidate carries (its registry entry: EtcdPresence.opsFor). */
    private readonly campaignOps: (c: Candidate) => readonly { request_put: { key: Buffer; value: Buffer; lease: string } }[] = () => [],
    /**
     * Whether a released candidate's lease is left to expire rather than revoked: it carries the
     * candidate's registry entry (presence.ts), which then outlives the release until the
     * candidate's next campaign puts it on its new lease (a hold-off is a retry period; a TTL at least 1 s).
     */
    private readonly keepsLease: (c: Candidate) => boolean = () => false,
  ) {}

  /** candidates reads the lock's candidate keys, oldest first, and the revision of the read. */
  async candidates(lock: string): Promise<CandidatesRead> {
    const res = await this.rpc.call(`read "${lock}"`, (o) => this.rpc.client.kv.range(this.rangeOf(lock), o));
    return { kvs: directCandidates(this.layout.lockPrefix(lock), res.kvs), revision: res.header.revision };
  }

  async read(lock: string): Promise<LeaseRecord | null> {
    return this.present(lock, (await this.candidates(lock)).kvs);
  }

  /**
   * present shows the lowest key as the lock's record. This handle's own candidate seen at the
   * front but not yet claimed is no longer kept alive in the background (state `first`): its
   * elector must campaign to claim it, or it expires within one TTL.
   */
  present(lock: string, kvs: readonly IKeyValue[]): LeaseRecord | null {
    const first = kvs[0];
    if (!first) return null;
    const own = this.registry.withKey(first.key);
    if (own?.state === 'queued') {
      noteKv(own, first);
      this.registry.setState(own, 'first');
    }
    return toRecord(lock, first);
  }

  /**
   * campaign puts this candidate's key (creating it if needed, else keeping its place) and tells
   * whether it leads: its key has the lowest create revision. From a leading answer on, its
   * lease lives only by renewals (see CandidateState).
   */
  campaign(lock: string, write: LeaseWrite, options: CampaignOptions = {}): Promise<CampaignResult> {
    const identity = write.holder!;
    const ownRdMs = options.renewDeadlineMs ?? write.leaseDurationMs;
    return this.registry.serial(lock, identity, async () => {
      // Guarded, the one behind this candidate reads its renew deadline from its key (RevocationGuard).
      const next = (await this.guard.enabled()) ? withRenewDeadline(write, options.renewDeadlineMs) : write;
      let candidate = this.registry.get(lock, identity);
      // A candidate already reported as leading must not be handed its term a second time.
      // Its lease is revoked before it is forgotten: were the store unreachable (its elector
      // stepped down in an outage), a key left behind would hold the lock for a whole TTL
      // after the store is back; the campaign fails instead and the next one revokes it.
      if (candidate?.state === 'leading') {
        await this.revoke(candidate);
        this.registry.remove(candidate);
        this.changed(lock);
        candidate = undefined;
      }
      if (candidate?.state === 'queued') {
        // Still waiting behind others: a read tells, with no write to the raft log (an elector
        // asks again every lease or so while it waits). Only a claim rewrites the key.
        const seen = await this.candidates(lock);
        const i = seen.kvs.findIndex((kv) => kv.key.toString() === candidate!.key);
        if (i >= 0) noteKv(candidate, seen.kvs[i]!);
        if (i > 0) {
          this.changed(lock, seen);
          return waitingAnswer(lock, seen.kvs);
        }
        // The read shows it at the front: claimed below, like one the watch found there.
        if (i === 0 && candidate.state === 'queued') this.registry.setState(candidate, 'first');
      }
      if (candidate?.state === 'first') {
        const claimed = await this.claim(candidate, next, options.claimWithinMs ?? 0, ownRdMs);
        if (claimed) return claimed;
        // Its lease or key is gone: start over with a new lease.
        void this.retire(candidate);
        candidate = undefined;
      }
      for (let attempt = 0; attempt < 2; attempt++) {
        const fresh = !candidate;
        const c = candidate ?? (await this.enlist(lock, identity, next.leaseDurationMs));
        const result = await this.campaignOnce(c, next, fresh, ownRdMs);
        if (result) return result;
        // Its lease had expired (e.g. queued while nobody watched) or its key vanished: start
        // over with a new lease.
        void this.retire(c);
        candidate = undefined;
      }
      return { ok: false, current: undefined };
    });
  }

  /**
   * claim makes a candidate known to be at the front (state `first`) the leader, with no write.
   *
   * Why it is safe, with no write and possibly no round trip:
   * - Nobody else leads while its key exists. No key with a lower create revision exists (that is
   *   what `first` means) and none can appear: etcd gives every new key a higher one.
   * - Its key exists until its lease goes (only its own handle deletes it otherwise, on release
   *   or withdraw). The lease lives at least a TTL ≥ leaseDurationMs past `checkedAtMs`, the send
   *   of a refresh that the server answered (a grant, or a read of the key followed by a
   *   keepalive on the member that answered it: KeepAliveStream.vouched). The elector's deadline is renewDeadline < leaseDurationMs past that send, so
   *   it has stopped before the key can expire and the next candidate lead. A refresh older than
   *   `withinMs` is made again here, a read of the key and then a keepalive, before answering (no
   *   write either).
   * - The term, the key's create revision, is above every earlier leader's: a key that led
   *   before this one was at the front while this one existed, so it was created earlier.
   * The key still holds the value it was queued with; the leader's acquiredAt, transitions and
   * metadata are kept in `owedValue`, which the first renewal writes in the txn that checks the
   * key anyway (the elector renews at once after such a claim).
   */
  private async claim(c: Candidate, next: LeaseWrite, withinMs: number, ownRdMs: number, marker?: IKeyValue | null): Promise<CampaignResult | undefined> {
    if (await this.guard.enabled()) {
      // Not before the predecessor has surely stopped (RevocationGuard); then a fresh refresh.
      const waitMs = await this.predecessorWaitMs(c, ownRdMs, marker);
      if (waitMs > 0) {
        await this.waitKeepingAlive(c, waitMs);
        withinMs = -1;
      }
    }
    if (!c.kv || c.checkedAtMs === undefined || !(performance.now() - c.checkedAtMs <= withinMs)) {
      // A read of the key, then a keepalive on the same member (see KeepAliveStream.vouched).
      const { answers, read: res, anchorMs } = await this.keepalive.vouched(
        [c.leaseId],
        (m) => m.call(`claim "${c.lock}"`, (o) => m.client.kv.range({ key: Buffer.from(c.key) }, o)),
        (r) => Number(r.header.raft_term),
      );
      const kv = res.kvs[0];
      if ((answers.ttls[0] ?? 0) === 0 || !kv || kv.create_revision !== c.createRevision) return undefined;
      c.checkedAtMs = anchorMs;
      c.kv = kv;
    }
    // Retired meanwhile (its lease found gone by the background keepalive): not ours to claim.
    if (this.registry.withKey(c.key) !== c || c.state !== 'first') return undefined;
    c.owedValue = encodeValue(next, c.identity);
    this.registry.setState(c, 'leading');
    // As the elector will have it once the owed value is written (the same key and revision now).
    c.record = toRecord(c.lock, { ...c.kv, value: c.owedValue });
    this.changed(c.lock);
    return { ok: true, record: c.record, leaseAgeMs: performance.now() - c.checkedAtMs! };
  }

  /**
   * predecessorWaitMs is how long `c`, at the front, must still wait before it leads: 0 when its
   * predecessor released, else until one renew deadline of that predecessor after `c` saw the
   * front free (RevocationGuard). `marker`: the lock's marker as read before `c`'s key existed.
   */
  private async predecessorWaitMs(c: Candidate, ownRdMs: number, marker?: IKeyValue | null): Promise<number> {
    const by = c.frontBy;
    c.frontBy = undefined;
    if (by) {
      if (await this.guard.releasedAt(c.lock, by.key, by.revision)) return 0;
      return by.atMs + (by.rdMs ?? ownRdMs) - performance.now();
    }
    // Found at the front by a read (ours, just answered): whoever led before went before now.
    const seenMs = performance.now();
    const known = marker !== undefined ? marker : await this.guard.readMarker(c.lock).catch(() => undefined);
    if (known !== undefined && (await this.guard.releasedBefore(c.lock, known, c.createRevision))) return 0;
    return seenMs + ownRdMs - performance.now();
  }

  /**
   * waitKeepingAlive waits `ms` with `c`'s lease kept alive (a third of its TTL apart): a wait
   * for a predecessor can be as long as a TTL, and `c` at the front is not kept alive otherwise.
   * These keepalives count for nothing (the claim refreshes again after the wait).
   */
  private async waitKeepingAlive(c: Candidate, ms: number): Promise<void> {
    const untilMs = performance.now() + ms;
    for (let left = ms; left > 0; left = untilMs - performance.now()) {
      await new Promise((r) => setTimeout(r, Math.min(left, (c.ttlSeconds * 1000) / 3)));
      if (untilMs - performance.now() > 0) await this.keepalive.keepAlive([c.leaseId]).catch(() => undefined);
    }
  }

  private async campaignOnce(c: Candidate, next: LeaseWrite, fresh: boolean, ownRdMs: number): Promise<CampaignResult | undefined> {
    const key = Buffer.from(c.key);
    const put = { request_put: { key, value: encodeValue(next, c.identity), lease: c.leaseId } };
    const range = { request_range: this.rangeOf(c.lock) };
    // Guarded: the lock's marker is read first (before our put), and a created key marks it.
    const guarded = await this.guard.enabled();
    const marker = { request_range: { key: this.guard.markerKey(c.lock) } };
    // The candidate's registry entry rides on the same lease, in the same txn (presence.ts).
    const extra = this.campaignOps(c);
    const txn = (m: Rpc) =>
      m.call(`campaign "${c.lock}"`, (o) =>
        m.client.kv.txn(
          {
            // Created only if absent, as etcd's Campaign does; an existing key of ours keeps
            // its place in the queue and gets the fresh value.
            compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }],
            success: guarded ? [marker, put, this.guard.createdOp(c.lock, key), ...extra, range] : [put, ...extra, range],
            failure: guarded ? [marker, put, ...extra, range] : [put, ...extra, range],
          },
          o,
        ),
      );
    let res;
    let answers: KeepAliveAnswers;
    let anchorMs: number | undefined;
    try {
      if (fresh) {
        // A fresh lease was granted through raft after this campaign began (enlist): it lives a
        // TTL past the grant's send, and needs no keepalive yet.
        res = await txn(this.rpc);
        answers = { ttls: [c.ttlSeconds], term: Infinity };
      } else {
        // An older lease is refreshed after the txn, on the member that answered it, so a win
        // counts from the txn's send (see KeepAliveStream.vouched).
        ({ read: res, answers, anchorMs } = await this.keepalive.vouched([c.leaseId], txn, (r) => Number(r.header.raft_term)));
      }
    } catch (err) {
      if (leaseGone(err)) return undefined;
      throw err;
    }
    if ((answers.ttls[0] ?? 0) === 0) return undefined;
    const kvs = directCandidates(this.layout.lockPrefix(c.lock), res.responses[res.responses.length - 1]!.response_range.kvs);
    const mine = kvs.find((kv) => kv.key.equals(key));
    if (!mine) return undefined;
    c.createRevision = mine.create_revision;
    c.kv = mine;
    c.owedValue = undefined;
    // A fresh lease was checked by its grant (enlist); an older one by the keepalive just sent.
    if (anchorMs !== undefined) c.checkedAtMs = anchorMs;
    // The txn read the lock's candidates after its put: the lock's watch can start from that.
    const seen = { kvs, revision: res.header.revision };
    if (kvs[0] === mine && guarded) {
      // At the front: led at once only if whoever led before surely stopped (RevocationGuard);
      // claim() waits if not, and refreshes the lease after the wait.
      this.registry.setState(c, 'first');
      this.changed(c.lock, seen);
      return this.claim(c, next, Infinity, ownRdMs, res.responses[0]!.response_range.kvs[0] ?? null);
    }
    if (kvs[0] === mine) {
      this.registry.setState(c, 'leading');
      c.record = toRecord(c.lock, mine);
      this.changed(c.lock, seen);
      return { ok: true, record: c.record };
    }
    this.registry.setState(c, 'queued');
    this.changed(c.lock, seen);
    return waitingAnswer(c.lock, kvs);
  }

  /** withdraw retires `holder`'s candidate of `lock` on this handle unless it leads (a leader releases). */
  withdraw(lock: string, holder: string): Promise<void> {
    return this.registry.serial(lock, holder, async () => {
      const c = this.registry.get(lock, holder);
      if (c && c.state !== 'leading') await this.retire(c);
    });
  }

  /**
   * requeue moves `write.holder`'s waiting candidate of `lock` to the back of the line (directed
   * handover, core/handover.ts): its lease is revoked, deleting its key, and it campaigns again
   * with a fresh lease, so with a key of a later create revision. A leading one is left alone.
   */
  async requeue(lock: string, write: LeaseWrite, options: CampaignOptions = {}): Promise<CampaignResult> {
    await this.withdraw(lock, write.holder!);
    return this.campaign(lock, write, options);
  }

  /** enlist grants a lease for a new candidate: TTL = leaseDurationMs rounded up to whole seconds. */
  private async enlist(lock: string, identity: string, leaseDurationMs: number): Promise<Candidate> {
    const ttl = Math.max(1, Math.ceil(leaseDurationMs / 1000));
    // The grant goes through raft after this: the lease lives at least a TTL past this instant.
    const sentMs = performance.now();
    const g = await this.rpc.call('lease grant', (o) => this.rpc.client.leaseClient.leaseGrant({ TTL: ttl }, o));
    const c: Candidate = {
      lock,
      identity,
      leaseId: String(g.ID),
      key: this.layout.candidateKey(lock, String(g.ID)),
      ttlSeconds: Math.max(ttl, Number(g.TTL) || ttl),
      createRevision: '0',
      state: 'queued',
      dueMs: 0,
      checkedAtMs: sentMs,
    };
    this.registry.add(c);
    return c;
  }

  /** update is a write without a new term: a renewal, a changed step-down flag, or a release. */
  async update(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    if (expected === null) return { ok: false, current: await this.read(lock) };
    if (next.holder === null) return this.release(lock, expected);
    const c = this.renewable(lock, expected, next);
    if (c) return (await this.renewLeaders([{ c, renewedAt: next.renewedAt }]))[0]!;
    return this.rewrite(lock, expected, next);
  }

  /**
   * renewMany renews this handle's leaders together — txns checking the keys, then keepalives
   * pipelined on a stream, in chunks for large batches (see renewLeaders) — and sends anything
   * else singly.
   */
  async renewMany(requests: readonly RenewRequest[]): Promise<WriteResult[]> {
    const results = new Array<WriteResult>(requests.length);
    const fast: (RenewItem & { i: number })[] = [];
    const slow: Promise<void>[] = [];
    requests.forEach((r, i) => {
      const c = this.renewable(r.lock, r.expected, r.next);
      if (c) fast.push({ i, c, renewedAt: r.next.renewedAt });
      else slow.push(this.update(r.lock, r.expected, r.next).then((w) => void (results[i] = w)));
    });
    const [renewed] = await Promise.all([this.renewLeaders(fast), ...slow]);
    fast.forEach((f, k) => (results[f.i] = renewed[k]!));
    return results;
  }

  /** renewable finds the leading candidate a plain renewal is about (nothing but renewedAt changes). */
  private renewable(lock: string, expected: string, next: LeaseWrite): Candidate | undefined {
    if (next.holder === null || next.newTerm) return undefined;
    const c = this.registry.get(lock, next.holder);
    const r = c?.record;
    if (!c || c.state !== 'leading' || !r || r.revision !== expected || r.stepDownRequested !== next.stepDownRequested) return undefined;
    // A changed metadata (a handover asked or accepted) is a rewrite, not a renewal.
    if (next.metadata !== r.metadata && !sameStoredMetadata(next.metadata, r.metadata)) return undefined;
    return c;
  }

  /**
   * renewLeaders renews this handle's leaders: in chunks of a few hundred (chunks.ts), each one
   * round trip of its own under its own deadline. In a batch of several chunks, a chunk that
   * fails is sent once more after the others: a failed chunk has changed nothing here, and a
   * keepalive sent later only makes its lease outlive what its elector counts on (from when
   * *it* started the renewal). A chunk failing twice fails the whole batch, since the contract
   * has no per-item error: no further chunk is started, and every elector of the batch retries.
   * Leases refreshed by the chunks that got through then last longer than their electors count
   * on, which is the safe side.
   */
  private renewLeaders(items: readonly RenewItem[]): Promise<WriteResult[]> {
    if (items.length === 0) return Promise.resolve([]);
    // A batch of one chunk is not tried again here: its electors retry on their own schedule.
    return inChunks(items, (chunk) => this.renewChunk(chunk), { attempts: items.length > CHUNK ? RENEW_ATTEMPTS : 1 });
  }

  /**
   * renewChunk sends txns that check each key is still at the mod revision of its record (so
   * still this candidate's key, unrewritten), then one keepalive per lease on the member that
   * answered them: a txn whose check holds answers with nothing but "succeeded"; one whose check
   * fails reads its keys instead (its failure branch), and those are judged one by one. A lease
   * renews only with a keepalive answered with TTL > 0 within the deadline *and* its key
   * confirmed: a keepalive alone does not show that the key was not deleted (e.g. a release by
   * another handle deletes the key and leaves the lease).
   */
  private async renewChunk(items: readonly RenewItem[]): Promise<WriteResult[]> {
    // The revision each check is made against: the record may be replaced while this is in
    // flight (this handle rewrote the key), and a check of the old one says nothing of the new.
    const expected = items.map(({ c }) => c.record!.revision);
    // A leader that claimed with no write owes its key its value: put in the success branch,
    // so only onto the key as it was claimed (never over a step-down flag written since).
    const owed = items.map(({ c }) => c.owedValue);
    // The txns go first, then the keepalives, on the member that answered them: only then does
    // an answer "TTL > 0" show that the lease was renewed by a leader of the current term
    // (KeepAliveStream.vouched).
    const sendChecks = (m: Rpc) => {
      const checks = [];
      for (let i = 0; i < items.length; i += MAX_TXN_OPS) {
        const chunk = items.slice(i, i + MAX_TXN_OPS);
        const keys = chunk.map(({ c }) => Buffer.from(c.key));
        const puts = chunk.flatMap(({ c }, k) => (owed[i + k] ? [{ request_put: { key: keys[k]!, value: owed[i + k]!, lease: c.leaseId } }] : []));
        checks.push(
          m.call('renew', (o) =>
            m.client.kv.txn(
              {
                compare: keys.map((key, k) => ({ key, target: 'Mod', result: 'Equal', mod_revision: modRevisionOf(expected[i + k]!) })),
                success: puts,
                failure: keys.map((key) => ({ request_range: { key } })),
              },
              o,
            ),
          ),
        );
      }
      return Promise.all(checks);
    };
    const {
      answers: { ttls },
      read: txns,
    } = await this.keepalive.vouched(
      items.map((item) => item.c.leaseId),
      sendChecks,
      (done) => Math.max(...done.map((t) => Number(t.header.raft_term))),
    );
    return items.map(({ c, renewedAt }, i) => {
      const txn = txns[Math.floor(i / MAX_TXN_OPS)]!;
      const ttl = ttls[i]!;
      if (txn.succeeded) {
        if (ttl === 0) return this.judgeRenewal(c, undefined, ttl, renewedAt); // the lease is gone
        // Replaced meanwhile: hand back the record as it now is; its elector renews that one.
        if (c.record!.revision !== expected[i]) return { ok: false, current: c.record };
        const value = owed[i];
        if (value && c.kv) {
          // The owed value is written: the key's mod revision is the txn's.
          c.kv = { ...c.kv, value, mod_revision: txn.header.revision };
          if (c.owedValue === value) c.owedValue = undefined;
          c.record = Object.freeze({ ...toRecord(c.lock, c.kv), renewedAt });
          return { ok: true, record: c.record };
        }
        c.record = Object.freeze({ ...c.record!, renewedAt });
        return { ok: true, record: c.record };
      }
      // Some key of this txn is no longer at its revision: judge each from what the txn read.
      return this.judgeRenewal(c, txn.responses[i % MAX_TXN_OPS]!.response_range.kvs[0], ttl, renewedAt);
    });
  }

  private judgeRenewal(c: Candidate, kv: IKeyValue | undefined, ttl: number, renewedAt: number): WriteResult {
    if (!kv || kv.create_revision !== c.createRevision || ttl === 0) {
      // Deleted or expired: leadership is over; the elector reads who leads now.
      this.retire(c);
      return { ok: false, current: undefined };
    }
    if (revisionOf(kv) !== c.record!.revision) {
      // Still ours, but someone rewrote it (the step-down flag): hand back what is there. Its
      // value stands; one owed from a claim is dropped (it would undo the flag).
      c.owedValue = undefined;
      c.kv = kv;
      c.record = toRecord(c.lock, kv);
      return { ok: false, current: c.record };
    }
    c.record = Object.freeze({ ...c.record!, renewedAt });
    return { ok: true, record: c.record };
  }

  /**
   * rewrite handles a write by a handle that does not hold the candidate (e.g. setting the
   * step-down flag from the CLI, asking or accepting a handover) and a leader's own write of a
   * new flag or metadata: compare with the leader, then rewrite its value keeping its lease, or
   * — if only renewedAt would change — keep its lease alive.
   */
  private async rewrite(lock: string, expected: string, next: LeaseWrite): Promise<WriteResult> {
    const { kvs } = await this.candidates(lock);
    const current = this.present(lock, kvs);
    const leader = kvs[0];
    if (!current || !leader || current.revision !== expected || current.holder !== next.holder) return { ok: false, current };
    const local = this.registry.withKey(leader.key);
    if (next.stepDownRequested === current.stepDownRequested && sameStoredMetadata(next.metadata, current.metadata)) {
      // The read above was not sent to a member a keepalive stream is open to: a second read,
      // on such a member, vouches for the keepalive sent after it (rare path: a handle renewing
      // a lease it did not campaign for).
      const {
        answers: { ttls },
        read: check,
      } = await this.keepalive.vouched(
        [leader.lease],
        (m) => m.call(`read "${lock}"`, (o) => m.client.kv.range({ key: leader.key }, o)),
        (r) => Number(r.header.raft_term),
      );
      if (ttls[0] === 0 || check.kvs[0]?.create_revision !== leader.create_revision) return { ok: false, current: undefined };
      const record = Object.freeze({ ...current, renewedAt: next.renewedAt });
      if (local) local.record = record;
      return { ok: true, record };
    }
    const value = encodeValue(next, current.holder!);
    let res;
    try {
      res = await this.rpc.call(`write "${lock}"`, (o) =>
        this.rpc.client.kv.txn(
          {
            compare: [{ key: leader.key, target: 'Mod', result: 'Equal', mod_revision: leader.mod_revision }],
            success: [{ request_put: { key: leader.key, value, lease: leader.lease } }],
            failure: [{ request_range: { key: leader.key } }],
          },
          o,
        ),
      );
    } catch (err) {
      if (leaseGone(err)) return { ok: false, current: undefined };
      throw err;
    }
    if (!res.succeeded) {
      const kv = res.responses[0]!.response_range.kvs[0];
      return { ok: false, current: kv && kv.create_revision === leader.create_revision ? toRecord(lock, kv) : undefined };
    }
    const kv = { ...leader, value, mod_revision: res.header.revision };
    const record = toRecord(lock, kv);
    if (local) {
      local.record = record;
      local.kv = kv;
      local.owedValue = undefined; // the value written here stands (it carries the flag)
    }
    return { ok: true, record };
  }

  /** release deletes the leader key if it is still at `expected`, then revokes its lease if ours. */
  private async release(lock: string, expected: string): Promise<WriteResult> {
    const rev = parseRevision(expected);
    let c = rev && this.registry.ofLock(lock).find((x) => x.createRevision === rev.create);
    let key: Buffer;
    if (c) {
      key = Buffer.from(c.key);
    } else {
      const { kvs } = await this.candidates(lock);
      const leader = kvs[0];
      if (!rev || !leader || revisionOf(leader) !== expected) return { ok: false, current: this.present(lock, kvs) };
      key = leader.key;
      c = this.registry.withKey(key);
    }
    // Guarded: the lock's marker says this key was released (RevocationGuard).
    const deleted = { request_delete_range: { key, prev_kv: true } };
    const success = (await this.guard.enabled()) ? [deleted, this.guard.releasedOp(lock, key)] : [deleted];
    const res = await this.rpc.call(`release "${lock}"`, (o) =>
      this.rpc.client.kv.txn(
        {
          compare: [
            { key, target: 'Create', result: 'Equal', create_revision: rev!.create },
            { key, target: 'Mod', result: 'Equal', mod_revision: rev!.mod },
          ],
          success,
          failure: [{ request_range: this.rangeOf(lock) }],
        },
        o,
      ),
    );
    if (!res.succeeded) {
      return { ok: false, current: this.present(lock, directCandidates(this.layout.lockPrefix(lock), res.responses[0]!.response_range.kvs)) };
    }
    if (c && this.keepsLease(c)) {
      this.registry.remove(c);
      this.changed(c.lock);
    } else if (c) void this.retire(c);
    const prev = res.responses[0]!.response_delete_range.prev_kvs[0];
    const base = prev ? toRecord(lock, prev) : undefined;
    const record: LeaseRecord = Object.freeze({
      lock,
      holder: null,
      term: Number(rev!.create),
      leaseDurationMs: base?.leaseDurationMs ?? 0,
      acquiredAt: base?.acquiredAt ?? 0,
      renewedAt: base?.renewedAt ?? 0,
      transitions: base?.transitions ?? 0,
      stepDownRequested: false,
      metadata: base?.metadata ?? {},
      revision: `${rev!.create}:${res.header.revision}`,
    });
    return { ok: true, record };
  }

  /** revoke revokes a candidate's lease (deleting its key); a lease already gone is fine. */
  private async revoke(c: Candidate): Promise<void> {
    try {
      await this.rpc.call('lease revoke', (o) => this.rpc.client.leaseClient.leaseRevoke({ ID: c.leaseId }, o));
    } catch (err) {
      if (!leaseGone(err)) throw err;
    }
  }

  /** retire forgets a candidate and revokes its lease (deleting its key, if still there). */
  retire(c: Candidate): Promise<void> {
    this.registry.remove(c);
    this.changed(c.lock);
    return this.rpc
      .call('lease revoke', (o) => this.rpc.client.leaseClient.leaseRevoke({ ID: c.leaseId }, o))
      .then(
        () => {},
        () => {}, // gone already, or unreachable: the lease then expires on its own
      );
  }

  rangeOf(lock: string): IRangeRequest {
    const key = Buffer.from(this.layout.lockPrefix(lock));
    return { key, range_end: prefixEnd(key), sort_order: 'Ascend', sort_target: 'Create' };
  }
}

/**
 * waitingAnswer is a campaign's answer for a candidate waiting in `kvs` (the lock's keys, oldest
 * first): the front's record, and — when it asks a handover — who waits behind it, in order.
 */
function waitingAnswer(lock: string, kvs: readonly IKeyValue[]): CampaignResult {
  const current = toRecord(lock, kvs[0]!);
  if (!asksHandover(current)) return { ok: false, current };
  return { ok: false, current, waiting: kvs.slice(1).map((kv) => toRecord(lock, kv).holder!) };
}

/** modRevisionOf is the mod revision in a `create:mod` revision of ours. */
function modRevisionOf(revision: string): string {
  return revision.slice(revision.indexOf(':') + 1);
}
