/**
 * How cron slots are shown to people and scripts (`baton status`): the last few slots of a
 * lock and how each ended.
 */
import type { Ledger } from '../core/store.js';
import { readCronHead, type CronHead, type SlotRecord } from './cron-ledger.js';
import { LEDGER_PREFIX } from './ledger-keys.js';

/** CronStatus is the JSON `baton status` shows for one cron lock. */
export interface CronStatus {
  lock: string;
  schedule: string | null;
  timezone: string | null;
  missed: string | null;
  /** Highest term that has written the lock's ledger entry. */
  term: number;
  lastSlot: string | null;
  /** Newest first. */
  slots: Array<Pick<SlotRecord, 'slot' | 'status' | 'term' | 'identity' | 'hostname' | 'pid' | 'startedAt' | 'finishedAt' | 'exitCode' | 'reason' | 'late' | 'skippedBefore'>>;
}

/** cronStatus summarises a lock's entry, with at most `limit` slots. */
export function cronStatus(head: CronHead, limit = 10): CronStatus {
  return {
    lock: head.lock,
    schedule: head.schedule ?? null,
    timezone: head.timezone ?? null,
    missed: head.missed ?? null,
    term: head.term,
    lastSlot: head.lastSlotMs === null ? null : new Date(head.lastSlotMs).toISOString(),
    slots: head.slots.slice(0, limit).map((s) => ({
      slot: s.slot,
      status: s.status,
      term: s.term,
      identity: s.identity,
      hostname: s.hostname,
      pid: s.pid,
      startedAt: s.startedAt,
      ...(s.finishedAt ? { finishedAt: s.finishedAt } : {}),
      ...(s.exitCode !== undefined ? { exitCode: s.exitCode } : {}),
      ...(s.reason ? { reason: s.reason } : {}),
      ...(s.late ? { late: true } : {}),
      ...(s.skippedBefore ? { skippedBefore: s.skippedBefore } : {}),
    })),
  };
}

/** readCronStatuses reads one lock's status, or every cron lock's (at most 200). */
export async function readCronStatuses(ledger: Ledger, lock?: string): Promise<CronStatus[]> {
  if (lock) {
    const head = await readCronHead(ledger, lock);
    return head ? [cronStatus(head)] : [];
  }
  const out: CronStatus[] = [];
  for (const e of await ledger.list(`${LEDGER_PREFIX}cron/`, 200)) {
    try {
      out.push(cronStatus(JSON.parse(e.value) as CronHead));
    } catch {
      // A damaged entry is shown by `baton status --lock` for that lock; skip it in the overview.
    }
  }
  return out;
}

/** formatCronStatus renders a status as a few lines of text (newest slot first). */
export function formatCronStatus(s: CronStatus, limit = 5): string {
  const lines = [
    `cron ${s.lock}: "${s.schedule ?? '?'}" (${s.timezone ?? 'UTC'}, missed: ${s.missed ?? 'latest'}); ledger term ${s.term}; ` +
      (s.slots.length ? 'last slots:' : 'no slot claimed yet'),
  ];
  for (const slot of s.slots.slice(0, limit)) {
    const exit = slot.exitCode !== undefined && slot.exitCode !== null ? ` exit ${slot.exitCode}` : '';
    const notes = [slot.late ? 'caught up late' : '', slot.skippedBefore ? `${slot.skippedBefore} missed before it` : '', slot.reason ?? ''].filter(Boolean);
    lines.push(`  ${slot.slot}  ${slot.status.padEnd(7)}${exit}  term ${slot.term} on ${slot.hostname} pid ${slot.pid}${notes.length ? ` (${notes.join('; ')})` : ''}`);
  }
  return lines.join('\n');
}
