/**
 * The store contract: the few atomic operations baton needs from a coordination store.
 *
 * A store is dumb and atomic; the elector (core/elector.ts) owns every policy decision —
 * when a lease counts as expired, when to renew, when to step down. A store only reads a
 * record, writes it conditionally, and (optionally) tells watchers that it changed.
 *
 * ## Two kinds of store
 * - **Compare-and-set stores** (SQL, Redis, memory, …): a lock is one record plus a revision.
 *   A candidate acquires by writing the record with a compare-and-set (`write` with `newTerm`).
 * - **Queue stores** (`queue` present: etcd's election, ZooKeeper's LeaderLatch): candidates
 *   enqueue with `queue.campaign`; the entry at the front leads, and the lock's record is that
 *   entry. `write` never creates an entry or a term there: a write with `newTerm` is refused as
 *   a lost race. Every other write is the same compare-and-set as on the other kind, made on
 *   the front entry — a renewal, the step-down flag, or a release (holder null), which removes
 *   the entry so the next one in line leads.
 *
 * ## Capabilities: presence is the capability
 * An optional member that is present is a capability — `watch`, `renewMany`, `list`, `ledger`,
 * `queue`, `renewRevisions` — and callers test the member itself, never a flag. `capabilities` holds only facts
 * that no member can show (`serverExpiry`, `leaseGranularityMs`).
 *
 * ## Atomicity
 * - `write(lock, expected, next)` is one atomic compare-and-set. With `expected === null` it is
 *   create-if-absent: it succeeds only if no record exists for `lock`. Otherwise it succeeds only
 *   if the current record's `revision` equals `expected` — a stale `expected` is refused even
 *   when the lock is free. Nothing else may happen in between.
 * - `renewMany` (optional) is a batch of such writes sent in one round trip; each item succeeds
 *   or fails on its own, atomically.
 * - `renewRevisions` (optional) is the renewal-only batch: each item is the same compare on its
 *   own lock's revision, and on success changes only `renewedAt` and the revision. Revisions go
 *   in and come out; no record is sent or returned, so nothing is encoded or parsed per lease.
 * - `queue.campaign` enqueues atomically: two candidates never both lead; a later entry is
 *   always behind an earlier one.
 *
 * ## Lost races are values, failures are errors
 * - A write whose condition does not hold resolves to `{ ok: false, current }` — never throws.
 *   `current` is the record as the store saw it when it refused (null if absent), or
 *   `undefined` when the store cannot tell cheaply. A campaign that does not lead is the same
 *   kind of value.
 * - A store whose server also holds a lock for the holder (Azure's blob lease) refuses a write
 *   when that lock was taken away (broken), even at an unchanged revision: a lost race too. A
 *   leader refused at the revision it holds steps down at once (it has nothing new to adopt).
 * - A store that cannot be reached, times out, or answers with an error throws
 *   `StoreUnavailableError` (core/errors.ts). SDK errors never leak out of a store's folder.
 *
 * ## The fencing token (`term`)
 * - When a write has `next.newTerm === true` (an acquisition), the store assigns
 *   `term = (highest term ever assigned for this lock) + 1` inside the same atomic step.
 *   Otherwise the term is kept as it is. On a queue store the term is the front entry's
 *   creation sequence (etcd: its create revision; ZooKeeper: its czxid).
 * - Terms are strictly increasing per lock and never reused: not after a release, not after the
 *   record is deleted or expires, not after the store restarts. Stores whose records can vanish
 *   (server-side expiry) keep the counter somewhere that does not.
 *
 * ## Time
 * - Stores never decide expiry from wall clocks written by clients. `acquiredAt`/`renewedAt`
 *   are informational. The elector decides expiry from its own monotonic observations, unless
 *   the store declares `serverExpiry`: then the record vanishes on the server's own timer once
 *   `leaseDurationMs` passes without a renewal, and the elector never takes over a live record.
 *   Queue stores always declare it: a leading entry lives only by its holder's renewals.
 */

/** HolderMetadata describes the process holding a lease (informational). */
export interface HolderMetadata {
  hostname?: string;
  pid?: number;
  version?: string;
  [key: string]: unknown;
}

/** LeaseRecord is one lock's current state, as stored. */
export interface LeaseRecord {
  /** The lock's name. */
  readonly lock: string;
  /** Identity of the current holder, or null when the lease is free (released). */
  readonly holder: string | null;
  /** Fencing token: strictly increasing per lock, assigned by the store on acquisition. */
  readonly term: number;
  /** The lease duration the holder promised to renew within. */
  readonly leaseDurationMs: number;
  /** Holder's wall-clock time of acquisition, ms since epoch (informational). */
  readonly acquiredAt: number;
  /** Holder's wall-clock time of the last renewal, ms since epoch (informational). */
  readonly renewedAt: number;
  /** Number of times the lease changed holder. */
  readonly transitions: number;
  /** Set when someone asked the holder to step down; the holder stops its work, then releases. */
  readonly stepDownRequested: boolean;
  /** Information about the holder process. */
  readonly metadata: HolderMetadata;
  /** Opaque value that changes on every successful write; the compare-and-set key. */
  readonly revision: string;
}

/** LeaseWrite is what the elector asks a store to write. */
export interface LeaseWrite {
  holder: string | null;
  /** True for an acquisition: the store assigns a new, higher term. */
  newTerm: boolean;
  leaseDurationMs: number;
  acquiredAt: number;
  renewedAt: number;
  transitions: number;
  stepDownRequested: boolean;
  metadata: HolderMetadata;
  /**
   * Set only on a directed handover's give (core/handover.ts, step 3): the writer is the holder
   * of the record at `expected`, and hands it on to `holder` with a new term. A store whose
   * server-side lock belongs to the holder (Azure's blob lease) moves that lock to the new
   * holder instead of acquiring it anew, which the holder's own lock would refuse. Other stores
   * ignore it; it is never stored.
   */
  givenByHolder?: boolean;
}

/** WriteResult is the outcome of a conditional write. */
export type WriteResult =
  | { readonly ok: true; readonly record: LeaseRecord }
  | { readonly ok: false; readonly current?: LeaseRecord | null };

/** RenewRequest is one item of a batch renewal. */
export interface RenewRequest {
  lock: string;
  expected: string;
  next: LeaseWrite;
}

/**
 * RevisionRenewal is one item of a renewal-only batch (`renewRevisions`): renew the lock's record
 * exactly as it is at revision `expected`, with a fresh `renewedAt`.
 */
export interface RevisionRenewal {
  readonly lock: string;
  /** The revision of the record the caller holds: the renewal is a compare-and-set on it. */
  readonly expected: string;
  /** The new renewedAt, wall ms (informational). */
  readonly renewedAt: number;
  /** The record's own lease duration (stores with server expiry re-arm their timer with it). */
  readonly leaseDurationMs: number;
}

/**
 * renewedRecord is `record` after a renewal-only write gave it `revision` at wall time `wallMs`:
 * the same record with only renewedAt (whole ms, as stores keep it) and the revision changed.
 * Callers of `renewRevisions` build the renewed record with it instead of reading it back.
 */
export function renewedRecord(record: LeaseRecord, wallMs: number, revision: string): LeaseRecord {
  return Object.freeze({ ...record, renewedAt: Math.round(wallMs), revision });
}

/**
 * LedgerEntry is a small durable value that never expires, kept beside the leases for job
 * ledgers (cron slots, run-once outcomes). `version` changes on every write.
 */
export interface LedgerEntry {
  readonly key: string;
  readonly value: string;
  readonly version: string;
}

/** LedgerPutResult: a lost race is a value, like WriteResult. */
export type LedgerPutResult =
  | { readonly ok: true; readonly entry: LedgerEntry }
  | { readonly ok: false; readonly current?: LedgerEntry | null };

/**
 * Ledger is a store's durable key/value area. `put` is atomic: create-if-absent when `expected`
 * is null, else compare-and-set on `version`. Entries survive releases, expiry and restarts.
 * Keys are at most 512 characters; values at most 64 KiB.
 */
export interface Ledger {
  get(key: string): Promise<LedgerEntry | null>;
  put(key: string, expected: string | null, value: string): Promise<LedgerPutResult>;
  /** Entries whose key starts with `prefix`, in key order, at most `limit` (default 1000). */
  list(prefix: string, limit?: number): Promise<LedgerEntry[]>;
  /**
   * remove deletes the entry only if its version is still `version`, in one atomic step: true
   * when it did; false when the entry is absent or was written since (a lost race is a value,
   * as for `put`). A key created again after a remove starts a new life: a `put` or `remove`
   * naming a version from before the remove fails. Optional: without it a store keeps every
   * entry for good (the candidate registry then only marks the entries of those who left).
   */
  remove?(key: string, version: string): Promise<boolean>;
}

/**
 * Presence keeps the candidate registry's entries (core/candidates.ts) with something the store
 * keeps alive anyway — etcd: the candidate's own queue lease, the entry written in the txn that
 * queues it; ZooKeeper: an ephemeral node of the handle's session — so an entry needs no beats
 * and goes when its candidate dies, loses its session or leaves the line. A store with it keeps
 * its registry at no request at rest.
 */
export interface Presence {
  /**
   * announce makes `value` `identity`'s entry for `lock` from now on, for as long as this handle
   * lives: written at once when the store can, else with the candidate's next campaign, and
   * written again when the store's session or lease is new.
   */
  announce(lock: string, identity: string, value: string): Promise<void>;
  /** withdraw ends `identity`'s entry for `lock`. */
  withdraw(lock: string, identity: string): Promise<void>;
  /** list is the values of `lock`'s live entries, in identity order. */
  list(lock: string): Promise<string[]>;
}

/**
 * StoreCapabilities are the facts about a store that no member shows. What a store can *do*
 * is told by its optional members instead (see "presence is the capability" above).
 */
export interface StoreCapabilities {
  /** Records vanish on the server's own timer after `leaseDurationMs` without renewal. */
  readonly serverExpiry: boolean;
  /** Lease durations are rounded up to this many ms by the server (e.g. 1000 for etcd). */
  readonly leaseGranularityMs?: number;
}

/**
 * CampaignResult is where a campaign left its candidate: `ok` when its entry is at the front
 * (it leads, `record` is its record), otherwise waiting behind `current` — the entry that leads
 * (null when none is visible, undefined when the store cannot tell cheaply).
 *
 * `leaseAgeMs` (only with `ok`) is set when the store claimed the front with no round trip of
 * its own: the entry's lease was last known refreshed — a request that the server answered, and
 * that was *sent* this many ms before the answer — and not after the campaign call began. The
 * elector then counts its leadership from that send, not from the call (rule 4 of the elector).
 *
 * `waiting` (only without `ok`, on a store with `queue.requeue`, and only when the front's record
 * asks a handover) is the holders waiting behind the front, in the order they will lead: the
 * first leads next unless it leaves the line (directed handover, LeaseQueue.requeue).
 */
export type CampaignResult = WriteResult & { readonly leaseAgeMs?: number; readonly waiting?: readonly string[] };

/**
 * CampaignOptions: `claimWithinMs` is the oldest a front entry's last checked lease refresh may
 * be for the store to claim it with no round trip (see `leaseAgeMs`); 0 or absent: the store
 * makes one round trip that refreshes the lease before it answers `ok`.
 */
export interface CampaignOptions {
  readonly claimWithinMs?: number;
  /**
   * The candidate's renew deadline: a store may keep it with the entry, for the candidate behind
   * to wait out should this one's lease end early (etcd's RevocationGuard). Default: the lease duration.
   */
  readonly renewDeadlineMs?: number;
}

/**
 * LeaseQueue is the queue kind's own verbs, after etcd's `concurrency.Election` (Campaign,
 * Resign) and Curator's LeaderLatch. Entries are per (lock, holder) on one store handle.
 *
 * A ZooKeeper store implements it with an ephemeral sequential znode per candidate under
 * `<lock>/`: campaign creates it (or rewrites its data if this handle has one), reads the
 * children and leads iff its sequence is the lowest; the term is its czxid; the session
 * timeout (≥ leaseDurationMs) bounds failover; `watch` watches the predecessor's deletion.
 */
export interface LeaseQueue {
  /**
   * campaign enqueues `candidate.holder` for `lock` — or, if this handle already queues it,
   * keeps its place and refreshes its value — and tells whether it leads now. Once it has
   * answered `ok`, the entry lives only by its holder's renewals (`write`/`renewMany` on the
   * record's revision): a leader that stops renewing is dropped by the server's timer after
   * leaseDurationMs, which is what lets a standby take over. A waiting entry is kept alive
   * by the store while `watch(lock)` is subscribed on this handle; when it reaches the front
   * the lock's listeners are called (with `undefined`): campaign again to claim it. An entry
   * that was already answered `ok` is never handed its term twice: it is replaced.
   *
   * Claiming the front needs no write for the place or the term (both were fixed when the entry
   * was created); what it needs is an anchor for the leader's deadline: a send the server
   * answered, after which the entry lives at least leaseDurationMs, so nobody behind it can lead
   * before the deadline. etcd answers `ok` for an entry it knows to be at the front with no round
   * trip (`leaseAgeMs`, within `options.claimWithinMs`) or after a keepalive and a read;
   * ZooKeeper writes the entry's record through its session (a read there would not do).
   */
  campaign(lock: string, candidate: LeaseWrite, options?: CampaignOptions): Promise<CampaignResult>;
  /**
   * withdraw takes `holder`'s waiting entry for `lock` on this handle out of the queue (etcd's
   * Resign of a candidate that does not lead). A leading entry is left alone: it is released
   * with a compare-and-set `write` (holder null) by the one that knows it leads.
   */
  withdraw(lock: string, holder: string): Promise<void>;
  /**
   * requeue moves `candidate.holder`'s waiting entry for `lock` on this handle to the back of the
   * line, and answers as campaign does: the entry is withdrawn, then enqueued again (a new entry,
   * so a new place and, should it lead, a new term). A leading entry is left alone.
   *
   * A queue store that has it supports directed handover (core/handover.ts): nobody can jump a
   * queue, so the candidates between the leader and the named successor step back one by one.
   * Such a store also (1) answers `waiting` on a campaign that does not lead, (2) calls the lock's
   * listeners of the entry right behind the front when the front's record changes to ask a
   * handover (and when an entry reaches that place behind a front that already asks one), and
   * (3) lets any handle rewrite the front record's metadata by compare-and-set (`write` with the
   * holder and term kept), as a compare-and-set store does.
   */
  requeue?(lock: string, candidate: LeaseWrite, options?: CampaignOptions): Promise<CampaignResult>;
}

/**
 * WatchListener is told that a lock's record may have changed. `record` is the new record
 * when the store knows it cheaply (null if the record is gone), `undefined` when the listener
 * should read it. Listeners may be called spuriously; they must not throw.
 */
export type WatchListener = (record: LeaseRecord | null | undefined) => void;

/** LeaseStore is the contract above. */
export interface LeaseStore {
  /** Short name of the kind of store, e.g. "sqlite". */
  readonly kind: string;
  readonly capabilities: StoreCapabilities;
  /** Reads the record for `lock`, or null if there is none. */
  read(lock: string): Promise<LeaseRecord | null>;
  /** Atomic compare-and-set (create-if-absent when `expected` is null); never acquires on a queue store. */
  write(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult>;
  /** Batch renewal in one round trip (optional). */
  renewMany?(requests: readonly RenewRequest[]): Promise<WriteResult[]>;
  /**
   * Renewal-only batch in one round trip (optional; see "Atomicity"). Answers item by item: the
   * record's new revision, or null when it is no longer at `expected` (a lost race: read it to
   * learn why). A record renewed here is the one at `expected` with only renewedAt and revision
   * changed, so the caller builds it itself. Items may carry more fields than RevisionRenewal.
   */
  renewRevisions?(items: readonly RevisionRenewal[]): Promise<(string | null)[]>;
  /** Watches one lock (optional: standbys then wait instead of polling). Returns an unsubscribe function. */
  watch?(lock: string, listener: WatchListener): () => void;
  /**
   * watchLive tells whether `watch` hears changes right now. A store whose change feed can drop
   * (a LISTEN session, a subscriber connection) reports false while it reconnects, and calls
   * its listeners once with `undefined` when the feed goes down, so a standby sleeping until an
   * expiry wakes up; the elector then polls every retry period until the feed is back. (Redis
   * also reports false until a newly watched lock's subscription is confirmed, so a read made
   * before it is followed by one after.) Absent means always live.
   */
  readonly watchLive?: boolean;
  /**
   * watchSeesExpiry (stores with `serverExpiry`) tells whether, while `watchLive`, `watch` also
   * reports records the server removed on its own timer, and a queue store's entry reaching the
   * front. A standby then waits for the notification with no timer of its own: an idle standby
   * sends nothing. Absent or false: it reads again a retry period after the expiry it computed.
   */
  readonly watchSeesExpiry?: boolean;
  /**
   * watchSeesRenewals (stores with `serverExpiry`) tells whether, while `watchLive`, `watch`
   * reports every renewal (a new revision) as well. The server's timer for a revision then
   * started before a standby heard of it, so the standby claims (create-if-absent) at leaseDuration
   * after hearing it, on a timer that only fires once renewals stop, instead of waiting for the
   * server to notice the expiry itself. Absent or false: renewals are silent (etcd keepalives).
   */
  readonly watchSeesRenewals?: boolean;
  /** Lists all records (optional). */
  list?(): Promise<LeaseRecord[]>;
  /** Durable entries for job ledgers (optional). */
  readonly ledger?: Ledger;
  /** Entries that live as long as their candidate, at no cost at rest (optional; see Presence). */
  readonly presence?: Presence;
  /** Present on a queue store: candidates enqueue here, and `write` never acquires. */
  readonly queue?: LeaseQueue;
  /** Releases connections and watchers. Idempotent. */
  close(): Promise<void>;
}

/**
 * HANDOVER_KEYS are the record metadata keys of a directed handover (core/handover.ts): the ask
 * (`to`: the candidate asked for), the acceptance (`ack`: the accepting instance), and on a given
 * record the instance it is for and where it came from. Part of the contract so that a store can
 * map its platform's own handover field onto the ask (Kubernetes' spec.preferredHolder).
 */
export const HANDOVER_KEYS = Object.freeze({ to: 'handoverTo', ack: 'handoverAck', instance: 'handoverInstance', from: 'handoverFrom' } as const);

/** asksHandover: `record`'s holder is asked to hand over (a queue store wakes the entry right behind it: LeaseQueue.requeue). */
export function asksHandover(record: LeaseRecord | null | undefined): boolean {
  return record?.holder != null && typeof record.metadata[HANDOVER_KEYS.to] === 'string';
}

/** MAX_LOCK_NAME_LENGTH bounds lock names so every store can key on them. */
export const MAX_LOCK_NAME_LENGTH = 200;

/** isLive tells whether a record names a holder (it may still be expired by observation). */
export function isHeld(record: LeaseRecord | null | undefined): record is LeaseRecord & { holder: string } {
  return !!record && record.holder !== null;
}
