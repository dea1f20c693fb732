import { realClock, sleep, type Clock } from './clock.js';
import { InvalidConfigError, LeaseLostError } from './errors.js';
import { HANDOVER_KEYS, type HolderMetadata, type LeaseRecord, type LeaseStore, type LeaseWrite, type WriteResult } from './store.js';
import { readCandidate } from './candidates.js';
import { releaseWrite } from './lease-writes.js';

/**
 * Directed handover: the leader gives its lease to one named candidate, drain-first, so that this
 * candidate — and only it — leads next, with a higher term, with no expiry waited out and no race.
 *
 * It is four compare-and-set writes on the lock's record, each of which any observer sees as a
 * new revision (so no standby's expiry clock runs out meanwhile). Everything is carried in the
 * record's metadata, so every compare-and-set store supports it as it is:
 *
 * 1. **Ask** (anyone: `baton handover`, the sidecar, the leader itself): the holder's record,
 *    holder and term unchanged, gets `handoverTo: ID`. Nothing stops yet.
 * 2. **Accept** (the candidate ID, when it hears of it): it adds `handoverAck: <its instance>`.
 *    Only a live, campaigning candidate answers, so a handover to anyone else changes nothing:
 *    the asker waits `ackTimeoutMs`, takes the question back and reports "not a live candidate".
 * 3. **Give** (the leader, seeing the acceptance): it stops its work exactly as on a step-down —
 *    signal aborted, `beforeRelease` awaited — and only then writes the record to name ID as
 *    holder with a new term, marked `handoverInstance: <that instance>`. Nobody acts under that
 *    term yet; to everyone else it is a held lease, timed by their own observation (rule 2).
 * 4. **Take** (the instance that accepted): a compare-and-set of that record with its own
 *    metadata, keeping the term; it leads from that write's start (rule 4), like any acquisition.
 *
 * If the successor dies between 3 and 4, its record is never renewed and expires by ordinary
 * observation: the open election resumes one lease duration after the give at the latest.
 *
 * **Queue stores** (etcd, ZooKeeper: `queue.requeue`) order their leaders by the line itself: the
 * record is the front entry's, the next leader is the entry right behind it, and nobody can jump
 * the line. There the same four steps run with the line brought into order between 1 and 2:
 *
 * 1½. **Step back**: the candidate right behind the front (the only one the store wakes for the
 *    ask), when ID waits behind it (the campaign's `waiting`), leaves the line and queues again at
 *    its back (`queue.requeue`). The next one is then right behind, and so on, until ID is: with k
 *    candidates ahead of ID, k re-queues. While ID is not queued at all, the one right behind
 *    looks again every retry period. A peer that is not baton's (`etcdctl elect`, Curator) never
 *    steps back: the acceptance then never comes and the question is taken back, as for a silent
 *    candidate.
 * 2. **Accept** is written by ID only when it is right behind the front (first in `waiting`).
 * 3. **Give** is a release of the front entry (work stopped first, as above): the entry right
 *    behind, ID's, is at the front and leads with its own, later, term. New entries queue behind
 *    it, so nobody can come between.
 * 4. **Take** is ID's ordinary claim of the front.
 * If ID dies between 2 and 3, the entry behind it leads after the release: an open outcome, as
 * after an expiry.
 */

/** directedHandoverRefusal: why `store` cannot do a directed handover, or undefined when it can. */
export function directedHandoverRefusal(store: LeaseStore): string | undefined {
  if (store.queue && !store.queue.requeue) return `${store.kind} orders its leaders by its own queue; leadership cannot be directed there`;
  return undefined;
}

/** Metadata keys of the protocol above. */
export const HANDOVER_TO = HANDOVER_KEYS.to;
export const HANDOVER_ACK = HANDOVER_KEYS.ack;
export const HANDOVER_INSTANCE = HANDOVER_KEYS.instance;
export const HANDOVER_FROM = HANDOVER_KEYS.from;

/** handoverAskedOf: the candidate `record`'s holder was asked to hand over to, if any. */
export function handoverAskedOf(record: LeaseRecord | null | undefined): string | undefined {
  const to = record?.holder != null ? record.metadata[HANDOVER_TO] : undefined;
  return typeof to === 'string' ? to : undefined;
}

/** handoverAcceptedBy: the instance of the candidate that accepted the handover asked in `record`, if any. */
export function handoverAcceptedBy(record: LeaseRecord | null | undefined): string | undefined {
  const ack = handoverAskedOf(record) !== undefined ? record!.metadata[HANDOVER_ACK] : undefined;
  return typeof ack === 'string' ? ack : undefined;
}

/** handedTo: the instance a given record (step 3) is for, if `record` is one. */
export function handedTo(record: LeaseRecord | null | undefined): string | undefined {
  const instance = record?.holder != null ? record.metadata[HANDOVER_INSTANCE] : undefined;
  return typeof instance === 'string' ? instance : undefined;
}

/** withMetadata is `record` as a write (holder, term and times kept) with `metadata`. */
export function sameRecordWith(record: LeaseRecord, metadata: HolderMetadata): LeaseWrite {
  return {
    holder: record.holder,
    newTerm: false,
    leaseDurationMs: record.leaseDurationMs,
    acquiredAt: record.acquiredAt,
    renewedAt: record.renewedAt,
    transitions: record.transitions,
    stepDownRequested: record.stepDownRequested,
    metadata,
  };
}

/** withoutHandover is `metadata` with the ask and the acceptance taken out. */
export function withoutHandover(metadata: HolderMetadata): HolderMetadata {
  const { [HANDOVER_TO]: _to, [HANDOVER_ACK]: _ack, ...rest } = metadata;
  return rest;
}

/** acceptWrite (step 2): `record` with the acceptance of `instance` added. */
export function acceptWrite(record: LeaseRecord, instance: string): LeaseWrite {
  return sameRecordWith(record, { ...record.metadata, [HANDOVER_ACK]: instance });
}

/** giveWrite (step 3): the leader's record handed to `to` (its instance `instance`), with a new term. */
export function giveWrite(record: LeaseRecord, to: string, instance: string, leaseDurationMs: number, wallMs: number): LeaseWrite {
  return {
    holder: to,
    newTerm: true,
    leaseDurationMs,
    acquiredAt: wallMs,
    renewedAt: wallMs,
    transitions: record.transitions + 1,
    stepDownRequested: false,
    metadata: { [HANDOVER_INSTANCE]: instance, [HANDOVER_FROM]: `${record.holder}@${record.term}` },
    givenByHolder: true,
  };
}

/**
 * giveLease is step 3's write, for a leader whose work has stopped: `record` (ours, accepted by
 * `to.instance`) written to `to` with a new term. A refused or failed write is looked at again,
 * `tries` times at most: it is done (`given`) once the record names `to`; `moved` when the record
 * is no longer ours at that term (nothing to give); `withdrawn` when it is ours but no longer
 * accepted by that instance (the caller releases it instead); `failed` when the store did not
 * let it through — the record is still ours and promised, and the caller tries again later (an
 * elector's next campaign step does), or the successor waits it out as a held lease.
 *
 * On a queue store the give is a release of the front entry (see 3 above): `given` then carries
 * the released record, and the successor, right behind, claims the front.
 */
export async function giveLease(
  store: LeaseStore,
  lock: string,
  record: LeaseRecord,
  to: { readonly identity: string; readonly instance: string },
  leaseDurationMs: number,
  clock: Clock,
  tries = 4,
): Promise<{ readonly outcome: 'given' | 'moved' | 'withdrawn' | 'failed'; readonly record: LeaseRecord | null; readonly error?: unknown }> {
  let expected: LeaseRecord | null = record;
  let error: unknown;
  for (let attempt = 0; attempt < tries; attempt++) {
    if (attempt > 0) {
      // A write that failed may have landed: read what is there before deciding again.
      if (error !== undefined) await sleep(clock, 20 * attempt);
      const current: LeaseRecord | null | undefined = expected ?? (await store.read(lock).catch((err: unknown) => void (error = err)));
      if (current === undefined) continue;
      if (current && current.holder === to.identity && handedTo(current) === to.instance) return { outcome: 'given', record: current };
      if (!current || current.holder !== record.holder || current.term !== record.term) return { outcome: 'moved', record: current };
      if (handoverAcceptedBy(current) !== to.instance) return { outcome: 'withdrawn', record: current };
      expected = current;
    }
    const at: LeaseRecord = expected!;
    expected = null;
    try {
      const give = store.queue ? releaseWrite(at, clock.wallMs()) : giveWrite(at, to.identity, to.instance, leaseDurationMs, clock.wallMs());
      const result = await store.write(lock, at.revision, give);
      if (result.ok) return { outcome: 'given', record: result.record };
      error = undefined;
      if (result.current !== undefined) expected = result.current;
      // A lost compare-and-set whose current record is ours, same term, still accepted is tried
      // again on it (a counter reservation refused, a late acceptance rewrite); read otherwise.
      if (result.current === null) return { outcome: 'moved', record: null };
    } catch (err) {
      error = err;
    }
  }
  return { outcome: 'failed', record: expected, error };
}

/**
 * promisedTo: the successor (identity and instance) that accepted the handover asked in `record`,
 * if any. Once its holder has stopped leading, such a record is owed to that successor (step 3
 * not yet written): never an orphan for its holder to take back.
 */
export function promisedTo(record: LeaseRecord | null | undefined): { identity: string; instance: string } | undefined {
  const instance = handoverAcceptedBy(record);
  if (instance === undefined) return undefined;
  return { identity: handoverAskedOf(record)!, instance };
}

/** takeWrite (step 4): the given record taken up by its successor, term kept. */
export function takeWrite(record: LeaseRecord, leaseDurationMs: number, wallMs: number, metadata: HolderMetadata): LeaseWrite {
  return { ...sameRecordWith(record, metadata), leaseDurationMs, acquiredAt: wallMs, renewedAt: wallMs, stepDownRequested: false };
}

/**
 * HandoverOutcome: `handed` (the successor leads, `record` is its record), `already` (the
 * successor already held the lease), `not-held` (nobody holds it), `not-candidate` (the successor
 * is not a live candidate: it never accepted; the leader kept leading and the question was taken
 * back), `moved` (the lease went elsewhere meanwhile: another handover, a step-down, an expiry).
 */
export type HandoverOutcome =
  | { readonly outcome: 'handed' | 'already'; readonly record: LeaseRecord }
  | { readonly outcome: 'not-held' | 'moved'; readonly record: LeaseRecord | null }
  | { readonly outcome: 'not-candidate'; readonly record: LeaseRecord | null; readonly why: string };

/** HandoverOptions for requestHandover. */
export interface HandoverOptions {
  /** Only if this candidate holds the lock. */
  readonly from?: string;
  /**
   * Refuse at once a successor that never registered as a candidate (stores with a ledger).
   * Default true; false for electors that do not register (a shard group's, whose members the
   * assignment names).
   */
  readonly checkRegistry?: boolean;
  /** How long the successor has to accept before the question is taken back. Default: the holder's lease duration. */
  readonly ackTimeoutMs?: number;
  /** Overall bound: rejects with LeaseLostError after it (the handover may still complete). Default 30 s. */
  readonly timeoutMs?: number;
  readonly clock?: Clock;
  /** How often the record is read while waiting, where the store has no watch. Default 50 ms. */
  readonly pollMs?: number;
}

/**
 * requestHandover asks the holder of `lock` to hand it to candidate `to` (the protocol above)
 * and waits until `to` leads. The leader never stops before `to` has accepted; if `to` does
 * not accept within `ackTimeoutMs`, the question is taken back and the outcome is
 * `not-candidate`. A store with a registry (a ledger or presence) is asked first whether `to`
 * registered as a candidate of `lock` (core/candidates.ts), so an unknown name is refused
 * without waiting.
 */
export async function requestHandover(store: LeaseStore, lock: string, to: string, options: HandoverOptions = {}): Promise<HandoverOutcome> {
  const why = directedHandoverRefusal(store);
  if (why) throw new InvalidConfigError(`handover: ${why}`);
  const clock = options.clock ?? realClock;
  const deadline = clock.monotonicMs() + (options.timeoutMs ?? 30_000);
  const pollMs = options.pollMs ?? 50;
  let record = await store.read(lock);
  if (!record || record.holder === null || (options.from !== undefined && record.holder !== options.from)) return { outcome: 'not-held', record };
  if (record.holder === to && handedTo(record) === undefined) return { outcome: 'already', record };
  if ((store.ledger || store.presence) && options.checkRegistry !== false) {
    const entry = await readCandidate(store, lock, to);
    if (!entry || entry.left) return { outcome: 'not-candidate', record, why: entry ? `${to} left the election (${entry.left})` : `${to} is not a registered candidate of "${lock}"` };
  }
  const from = { holder: record.holder, term: record.term };
  const stillFrom = (r: LeaseRecord | null): r is LeaseRecord => !!r && r.holder === from.holder && r.term === from.term;
  // 1. Ask.
  const asked = await askFor(store, lock, record, to, Infinity);
  if (!stillFrom(asked.record) || handoverAskedOf(asked.record) !== to) return { outcome: 'moved', record: asked.record };
  record = asked.record;
  // 2–4. Wait for the acceptance, then for the successor to lead.
  const ackBy = clock.monotonicMs() + (options.ackTimeoutMs ?? record.leaseDurationMs);
  for (;;) {
    const current = await store.read(lock);
    if (current && current.holder === to && current.term > from.term && handedTo(current) === undefined) return { outcome: 'handed', record: current };
    const given = !!current && current.holder === to && handedTo(current) !== undefined;
    if (!stillFrom(current) && !given) return { outcome: 'moved', record: current };
    if (stillFrom(current) && handoverAskedOf(current) !== to) return { outcome: 'moved', record: current };
    if (stillFrom(current) && handoverAcceptedBy(current) === undefined && clock.monotonicMs() >= ackBy) {
      // Nobody accepted: take the question back (a late acceptance loses its compare-and-set).
      const back = await store.write(lock, current.revision, sameRecordWith(current, withoutHandover(current.metadata)));
      if (back.ok) return { outcome: 'not-candidate', record: back.record, why: `${to} did not accept within ${Math.round(options.ackTimeoutMs ?? current.leaseDurationMs)}ms (not running, or not campaigning for "${lock}")` };
      continue; // accepted (or changed) just now: look again
    }
    if (clock.monotonicMs() >= deadline) {
      // Out of time: a question nobody accepted is taken back, so a late acceptance cannot move
      // leadership after the caller was told it failed. An accepted one is left to finish.
      if (stillFrom(current) && handoverAcceptedBy(current) === undefined) {
        await store.write(lock, current.revision, sameRecordWith(current, withoutHandover(current.metadata))).catch(() => undefined);
      }
      throw new LeaseLostError(`handover: "${lock}" did not reach ${to} within the timeout`);
    }
    await sleep(clock, pollMs);
  }
}

/**
 * askFor is step 1: `record`'s holder asked to hand over to `to`, by a compare-and-set that keeps
 * holder and term. A lost compare-and-set on a record still of that holder and term (a renewal,
 * another ask, an acceptance) is asked again on what is there now, `tries` times at most; a
 * record already asking `to` is left as it is. `ok` false: the record moved on, or tries ran out.
 */
async function askFor(store: LeaseStore, lock: string, record: LeaseRecord, to: string, tries: number): Promise<{ ok: boolean; record: LeaseRecord | null }> {
  let current: LeaseRecord | null = record;
  for (let attempt = 0; handoverAskedOf(current) !== to; attempt++) {
    if (attempt >= tries) return { ok: false, record: current };
    const result: WriteResult = await store.write(lock, current.revision, sameRecordWith(current, { ...withoutHandover(current.metadata), [HANDOVER_TO]: to }));
    if (result.ok) return { ok: true, record: result.record };
    current = result.current !== undefined ? result.current : await store.read(lock);
    if (!current || current.holder !== record.holder || current.term !== record.term) return { ok: false, record: current };
  }
  return { ok: true, record: current };
}

/**
 * askAndAwaitAcceptance is steps 1–2 for a leader that is leaving anyway (stop() with a
 * registry): ask `to` on `record`, and wait up to `boundMs` for its acceptance. Resolves with
 * the accepted record and the accepting instance, or undefined (question taken back, or the
 * record moved) — the leader then releases as it would have. It reads the record every
 * `pollMs`, and at once whenever `onChange` (the caller's watch of the lock, if any) reports a
 * change: on a notifying store the acceptance is seen one notification after it is written.
 */
export async function askAndAwaitAcceptance(
  store: LeaseStore,
  lock: string,
  record: LeaseRecord,
  to: string,
  boundMs: number,
  clock: Clock,
  pollMs = 25,
  onChange?: (listener: () => void) => () => void,
): Promise<{ record: LeaseRecord; instance: string } | undefined> {
  const by = clock.monotonicMs() + boundMs;
  let changed = false;
  let wake: (() => void) | undefined;
  const off = onChange?.(() => {
    changed = true;
    wake?.();
  });
  try {
    return await ask();
  } finally {
    off?.();
  }

  async function ask(): Promise<{ record: LeaseRecord; instance: string } | undefined> {
    // 1. Ask. A lost compare-and-set on a record that is still ours (the preference rule asking
    // at the same moment, a standby's acceptance of that) is asked again on what is there now;
    // a record already asking `to` is waited on as it is.
    const first = await askFor(store, lock, record, to, 3);
    let current: LeaseRecord | null = first.record;
    if (!first.ok) return undefined;
    while (clock.monotonicMs() < by) {
      if (!changed) {
        await new Promise<void>((resolve) => {
          const timer = clock.setTimer(() => resolve(), pollMs);
          wake = () => {
            clock.clearTimer(timer);
            resolve();
          };
        });
      }
      changed = false;
      wake = undefined;
      current = await store.read(lock);
      if (!current || current.holder !== record.holder || current.term !== record.term || handoverAskedOf(current) !== to) return undefined;
      const instance = handoverAcceptedBy(current);
      if (instance !== undefined) return { record: current, instance };
    }
    if (current) await store.write(lock, current.revision, sameRecordWith(current, withoutHandover(current.metadata))).catch(() => undefined);
    return undefined;
  }
}
