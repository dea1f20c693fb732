/**
 * The leadership window: what the supervisor needs to know about one term, and nothing more —
 * its fencing token, a signal that fires when it ends, and when the command must be stopped.
 * An elector's term (`electorWindow`) and a task lock's fixed hold (`fixedWindow`) are both
 * windows, so the watchdog logic never depends on a whole elector.
 */
import type { LeaderElector, StopReason, StoppedEvent } from '../core/elector.js';

/**
 * KillSchedule is when the command must stop, in performance.now() milliseconds: SIGTERM at
 * `termAtMs`, SIGKILL at `killAtMs` (always before any other candidate could be elected).
 */
export interface KillSchedule {
  readonly termAtMs: number;
  readonly killAtMs: number;
}

/** LeadershipWindow is one term as the supervisor sees it. */
export interface LeadershipWindow {
  /** The term's fencing token (BATON_TERM). */
  readonly term: number;
  /** Aborted, with the StopReason as its `reason`, when baton learns the term has ended. */
  readonly signal: AbortSignal;
  /** deadline reads the current kill schedule; it moves forward after each renewal. */
  deadline(): KillSchedule;
  /** onExtended calls `fn` whenever the deadline moved; returns the unsubscribe function. */
  onExtended(fn: () => void): () => void;
}

/**
 * killSchedule: SIGTERM at the leader's deadline (`renewStartMs + renewDeadlineMs`) and SIGKILL
 * halfway between that deadline and the moment another candidate could acquire the lease.
 */
export function killSchedule(renewStartMs: number, timing: { leaseDurationMs: number; renewDeadlineMs: number }): KillSchedule {
  const termAtMs = renewStartMs + timing.renewDeadlineMs;
  return { termAtMs, killAtMs: termAtMs + (timing.leaseDurationMs - timing.renewDeadlineMs) / 2 };
}

/** windowEnded tells whether the term is over: baton saw it end, or its deadline has passed. */
export function windowEnded(window: LeadershipWindow, nowMs = performance.now()): boolean {
  return window.signal.aborted || nowMs >= window.deadline().termAtMs;
}

/**
 * electorWindow is `term` of `elector` as a window. If the elector no longer leads with that
 * term, the window is already ended ('lost') and its deadline is now. Its listener on the
 * elector goes away when the term stops.
 */
export function electorWindow(elector: LeaderElector, term: number): LeadershipWindow {
  const controller = new AbortController();
  const scheduleNow = () => {
    const w = elector.leadershipWindow();
    return w && w.term === term ? killSchedule(w.renewStartMs, elector.timing) : undefined;
  };
  // An ended term keeps the last schedule it had: the watchdog must not be given a later one.
  let last = scheduleNow() ?? killSchedule(performance.now() - elector.timing.renewDeadlineMs, elector.timing);
  if (elector.leadershipWindow()?.term !== term) controller.abort('lost' satisfies StopReason);
  else {
    const onStopped = (e: StoppedEvent) => {
      if (e.term !== term) return;
      elector.off('stopped', onStopped);
      controller.abort(e.reason);
    };
    elector.on('stopped', onStopped);
  }
  return {
    term,
    signal: controller.signal,
    deadline() {
      if (!controller.signal.aborted) last = scheduleNow() ?? last;
      return last;
    },
    onExtended(fn) {
      const on = () => {
        if (!controller.signal.aborted) fn();
      };
      elector.on('renewed', on);
      return () => elector.off('renewed', on);
    },
  };
}

/**
 * fixedWindow is a window that is never renewed and never ended early: work bounded by a
 * deadline rather than a lease (task locks). It started at `startedMs` (performance.now());
 * SIGTERM `termAfterMs` later, SIGKILL halfway from there to `lastMs`.
 */
export function fixedWindow(term: number, startedMs: number, termAfterMs: number, lastMs: number): LeadershipWindow {
  const schedule = killSchedule(startedMs, { renewDeadlineMs: termAfterMs, leaseDurationMs: lastMs });
  return { term, signal: new AbortController().signal, deadline: () => schedule, onExtended: () => () => {} };
}
