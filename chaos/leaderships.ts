/**
 * Leaderships rebuilt from the candidates' logs: who held which term, from when, until when
 * isLeader() was true (the deadline the elector computed) and until when the process believed
 * it (its `stopped`, or its death — a killed process believes nothing).
 */
import type { CandidateEvent, HarnessEvent } from './events.js';

/** Leadership is one term held by one process, on the shared timeline. */
export interface Leadership {
  identity: string;
  term: number;
  electedAt: number;
  /** When the acquiring write was sent. */
  acquireStart: number;
  /** When isLeader() turned false, as of the last renewal logged. */
  deadline: number;
  /** When the process noticed the end (stopped), or died. */
  believedEnd: number;
}

/** Renewal is one successful renewal and its round trip. */
export interface Renewal {
  identity: string;
  t: number;
  rttMs: number;
}

/** leadershipsFrom reads every candidate log; leaderships still open at the end close at death or `endAt`. */
export function leadershipsFrom(
  candidates: ReadonlyMap<string, CandidateEvent[]>,
  harness: readonly HarnessEvent[],
  endAt: number,
): { leaderships: Leadership[]; renewals: Renewal[] } {
  // A SIGKILLed process is dead from the signal on; the harness may hear of the exit later.
  const deaths = new Map<string, number>();
  const died = (identity: string, t: number) => deaths.set(identity, Math.min(t, deaths.get(identity) ?? Infinity));
  for (const e of harness) {
    if (e.ev === 'exit') died(e.identity, e.t);
    else if (e.ev === 'inject' && e.kind === 'kill' && e.target) died(e.target, e.t);
  }
  const leaderships: Leadership[] = [];
  const renewals: Renewal[] = [];
  for (const [identity, events] of candidates) {
    let open: Leadership | undefined;
    const death = deaths.get(identity) ?? endAt;
    const close = (t: number) => {
      if (open) leaderships.push({ ...open, believedEnd: Math.min(t, death) });
      open = undefined;
    };
    for (const e of events) {
      if (e.ev === 'elected') {
        close(e.t);
        // Logs from before ae543de hold no times for a leadership already over when its
        // `elected` was logged (its `stopped` came first): count it as empty, at that moment.
        const over = e.acquireStart == null || e.deadline == null;
        open = { identity, term: e.term, electedAt: e.t, acquireStart: over ? e.t : e.acquireStart, deadline: over ? e.t : e.deadline, believedEnd: NaN };
      } else if (e.ev === 'renewed') {
        renewals.push({ identity, t: e.t, rttMs: e.rttMs });
        if (open && open.term === e.term) open.deadline = e.deadline;
      } else if ((e.ev === 'stopped' && open?.term === e.term) || e.ev === 'exit') {
        close(e.t);
      }
    }
    close(death);
  }
  return { leaderships, renewals };
}
