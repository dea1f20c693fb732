/**
 * The cron ledger: one entry per lock, `baton/cron/<lock>`, that is both the fence and the
 * record of recent slots.
 *
 *   { v: 1, lock, term, lastSlotMs, schedule, timezone, missed, slots: [SlotRecord…] }
 *
 * `term` is the highest fencing token that ever wrote the entry; `lastSlotMs` the newest slot
 * ever claimed; `slots` the most recent claims, newest first (bounded, see HISTORY).
 *
 * ## Why one entry, and why that makes each slot run at most once
 *
 * The ledger offers atomic compare-and-set on one key only; there is no transaction across
 * keys. So the claim of a slot and the fence against stale leaders must be the *same* write,
 * on the same key. A claim of slot S by a leader with term T is one CAS of this entry from the
 * version it just read, allowed only if, in that version, `term ≤ T` and `lastSlotMs < S`;
 * the write sets `term = T`, `lastSlotMs = S` and adds S to `slots`.
 *
 * - At most once per slot: every successful claim raises `lastSlotMs` strictly, and CAS writes
 *   to one key are totally ordered. A second claim of S (by anyone, any term) would have to
 *   read a version written before the first claim of S and still win its CAS — impossible,
 *   because the first claim changed the version. So no two claims of S both succeed.
 * - No stale leader after a newer term: once term T' has written the entry (its fence on
 *   election, or any claim), every later version has `term ≥ T'`; a leader with T < T' reads
 *   such a version and refuses, or holds an older version and loses the CAS.
 * - Clocks that disagree: hosts compute slots from their own wall clocks, but a slot at or
 *   before `lastSlotMs` is never claimed again, so a leader whose clock runs behind skips
 *   slots rather than repeating them.
 * - A crash between the claim and the start of the command leaves the slot claimed but not
 *   run (status `running` until the next term marks it `cut`): at most once, not at least once.
 *
 * The per-slot outcome is written later by the claimer (a CAS that changes only that slot's
 * record); a newer leader's fence marks older terms' `running` slots `cut`, because by the
 * elector's guarantee their leader had stopped before the newer term was granted.
 */
import { hostname } from 'node:os';
import type { Ledger } from '../core/store.js';
import { cronLedgerKey, readJson, updateJson } from './ledger-keys.js';
import type { MissedPolicy } from './schedule.js';
import type { RunOutcome } from './runner.js';

/** HISTORY is how many recent slots the entry keeps (values must stay well under 64 KiB). */
export const HISTORY = 100;
const MAX_VALUE_CHARS = 60_000;

/**
 * SlotStatus: running, ok (exit 0), failed (non-zero exit), cut (stopped before it finished),
 * done (finished, by a scheduler that does not say whether it succeeded: node-cron).
 */
export type SlotStatus = 'running' | 'ok' | 'failed' | 'cut' | 'done';

/** SlotRecord is one claimed slot. Wall times are the claimer's, for people to read. */
export interface SlotRecord {
  slot: string;
  slotMs: number;
  term: number;
  identity: string;
  hostname: string;
  pid: number;
  /** Random per claim, so a claimer can recognise its own write after an ambiguous failure. */
  claim: string;
  status: SlotStatus;
  startedAt: string;
  finishedAt?: string;
  exitCode?: number | null;
  signal?: string | null;
  reason?: string;
  /** A missed slot caught up by the `latest` policy. */
  late?: boolean;
  /** Slots skipped between the previous claim and this one. */
  skippedBefore?: number;
}

/** CronHead is the whole entry. */
export interface CronHead {
  v: 1;
  lock: string;
  term: number;
  lastSlotMs: number | null;
  schedule?: string;
  timezone?: string;
  missed?: MissedPolicy;
  slots: SlotRecord[];
}

/** ClaimResult: claimed, or why not. */
export type ClaimResult =
  | { readonly ok: true; readonly head: CronHead; readonly record: SlotRecord }
  | { readonly ok: false; readonly reason: 'stale' | 'taken'; readonly head: CronHead };

/** Who is writing, and the schedule they run (recorded for `baton status`). */
export interface CronWriter {
  readonly identity: string;
  readonly schedule?: string;
  readonly timezone?: string;
  readonly missed?: MissedPolicy;
}

function emptyHead(lock: string): CronHead {
  return { v: 1, lock, term: 0, lastSlotMs: null, slots: [] };
}

/** Marks running slots of terms older than `term` as cut: their leader has stopped. */
function cutOlderRuns(slots: SlotRecord[], term: number, wallMs: number): SlotRecord[] {
  return slots.map((s) =>
    s.status === 'running' && s.term < term
      ? { ...s, status: 'cut' as const, finishedAt: new Date(wallMs).toISOString(), reason: `leader of term ${s.term} stopped; term ${term} took over` }
      : s,
  );
}

function bounded(head: CronHead): CronHead {
  const slots = head.slots.slice(0, HISTORY);
  while (slots.length > 1 && JSON.stringify({ ...head, slots }).length > MAX_VALUE_CHARS) slots.pop();
  return { ...head, slots };
}

function withWriter(head: CronHead, w: CronWriter): CronHead {
  return { ...head, schedule: w.schedule ?? head.schedule, timezone: w.timezone ?? head.timezone, missed: w.missed ?? head.missed };
}

/** readCronHead returns a lock's entry, or null if no leader has ever written it. */
export async function readCronHead(ledger: Ledger, lock: string): Promise<CronHead | null> {
  return (await readJson<CronHead>(ledger, cronLedgerKey(lock)))?.value ?? null;
}

/**
 * fenceCron is a new leader's first write: it raises the entry's term to `term` (so no older
 * term can claim from now on) and marks older terms' running slots cut. Resolves with the
 * entry, or `{ stale }` if a newer term has already written it.
 */
export async function fenceCron(ledger: Ledger, lock: string, term: number, writer: CronWriter, wallMs: number): Promise<{ head: CronHead; stale: boolean }> {
  return updateJson<CronHead, { head: CronHead; stale: boolean }>(ledger, cronLedgerKey(lock), (cur) => {
    const head = cur?.value ?? emptyHead(lock);
    if (head.term > term) return { done: { head, stale: true } };
    const next = bounded(withWriter({ ...head, term, slots: cutOlderRuns(head.slots, term, wallMs) }, writer));
    return { write: next, then: () => ({ head: next, stale: false }) };
  });
}

/**
 * claimSlot claims `slotMs` for `term` in one compare-and-set (see the header for why that is
 * enough). If `claim` names a claim already in the entry (our earlier attempt landed but its
 * answer was lost), that claim is returned as ours.
 */
export async function claimSlot(
  ledger: Ledger,
  lock: string,
  term: number,
  slotMs: number,
  writer: CronWriter,
  extra: { claim: string; wallMs: number; late?: boolean; skippedBefore?: number },
): Promise<ClaimResult> {
  return updateJson<CronHead, ClaimResult>(ledger, cronLedgerKey(lock), (cur) => {
    const head = cur?.value ?? emptyHead(lock);
    const mine = head.slots.find((s) => s.claim === extra.claim);
    if (mine) return { done: { ok: true, head, record: mine } };
    if (head.term > term) return { done: { ok: false, reason: 'stale', head } };
    if (head.lastSlotMs !== null && head.lastSlotMs >= slotMs) return { done: { ok: false, reason: 'taken', head } };
    const record: SlotRecord = {
      slot: new Date(slotMs).toISOString(),
      slotMs,
      term,
      identity: writer.identity,
      hostname: hostname(),
      pid: process.pid,
      claim: extra.claim,
      status: 'running',
      startedAt: new Date(extra.wallMs).toISOString(),
      ...(extra.late ? { late: true } : {}),
      ...(extra.skippedBefore ? { skippedBefore: extra.skippedBefore } : {}),
    };
    const next = bounded(withWriter({ ...head, term, lastSlotMs: slotMs, slots: [record, ...cutOlderRuns(head.slots, term, extra.wallMs)] }, writer));
    return { write: next, then: () => ({ ok: true, head: next, record }) };
  });
}

/** statusOf maps a run's outcome to the slot's final status. */
export function statusOf(outcome: RunOutcome): SlotStatus {
  if (outcome.kind === 'cut') return 'cut';
  return outcome.exitCode === 0 ? 'ok' : 'failed';
}

/**
 * finishSlot records how a claimed slot's run ended. Only the claim's own record changes; it
 * is written even if a newer term marked it cut meanwhile, because the claimer knows the real
 * outcome. Resolves false if the record has left the history.
 */
export async function finishSlot(ledger: Ledger, lock: string, claim: string, outcome: RunOutcome, wallMs: number): Promise<boolean> {
  return updateJson<CronHead, boolean>(ledger, cronLedgerKey(lock), (cur) => {
    const head = cur?.value;
    const index = head ? head.slots.findIndex((s) => s.claim === claim) : -1;
    if (!head || index < 0) return { done: false };
    const slots = [...head.slots];
    slots[index] = {
      ...slots[index]!,
      status: statusOf(outcome),
      finishedAt: new Date(wallMs).toISOString(),
      exitCode: outcome.exitCode ?? null,
      ...(outcome.kind === 'exit' && outcome.signal ? { signal: outcome.signal } : {}),
      ...(outcome.kind === 'cut' ? { reason: outcome.reason } : outcome.error ? { reason: outcome.error } : { reason: undefined }),
    };
    return { write: { ...head, slots }, then: () => true };
  });
}

/**
 * markSlot sets a claimed slot's final status when the claimer knows only that the run ended
 * (`done`) or that it was stopped (`cut`, with `reason`): the node-cron adapter's case.
 * Resolves false if the record has left the history.
 */
export async function markSlot(ledger: Ledger, lock: string, claim: string, status: 'done' | 'cut', wallMs: number, reason?: string): Promise<boolean> {
  return updateJson<CronHead, boolean>(ledger, cronLedgerKey(lock), (cur) => {
    const head = cur?.value;
    const index = head ? head.slots.findIndex((s) => s.claim === claim) : -1;
    if (!head || index < 0) return { done: false };
    const slots = [...head.slots];
    slots[index] = { ...slots[index]!, status, finishedAt: new Date(wallMs).toISOString(), ...(reason ? { reason } : {}) };
    return { write: { ...head, slots }, then: () => true };
  });
}
