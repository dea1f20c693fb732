/**
 * The term runner: how every command that runs something while leading (run, serve, cron,
 * once, lock) runs it. One function, `runTerm`, does the whole of one term:
 *
 * 1. builds the child's environment once: the caller's, plus BATON_LOCK, BATON_IDENTITY,
 *    BATON_TERM and the job's own variables (BATON_SLOT, BATON_KEY, ...);
 * 2. starts the command under the watchdog (supervisor.ts), which holds the window's deadline
 *    on CLOCK_MONOTONIC and moves it forward on each renewal;
 * 3. stops the command (SIGTERM now, SIGKILL before anyone else could lead) as soon as the
 *    window ends, if it ends first;
 * 4. classifies how the run ended (TermOutcome), including the overdue case: the command
 *    exited by itself, with a failure, after the window had already ended (baton stalled past
 *    its deadline and saw the end late) — that failure is the cut, not the command's own.
 *
 * What to do next (campaign again, record a slot, exit) stays with each command.
 */
import type { StopReason } from '../core/elector.js';
import { windowEnded, type LeadershipWindow } from './leadership-window.js';
import { ExitCode } from './exit-codes.js';
import { signalExitCode } from './signals.js';
import { Supervisor, type CommandExit } from './supervisor.js';

/** TermCommand is what to run for one term, and as whom. */
export interface TermCommand {
  readonly argv: string[];
  readonly lock: string;
  readonly identity: string;
  /** Extra variables for the command (a job's BATON_SLOT, BATON_KEY, ...); they win over ours; undefined removes one. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Called once, when the window ends before the command has exited (or it was overdue). */
  readonly onLost?: (reason: StopReason) => void;
}

/** TermOutcome is how one term's command ended; `code` is always its shell-style exit code. */
export type TermOutcome =
  /** It exited by itself while leading (or succeeded just as the window ended). */
  | { readonly kind: 'exited'; readonly code: number; readonly exit: CommandExit; readonly interrupted?: NodeJS.Signals }
  /** It could not be started: code 126 (not executable) or 127 (not found). */
  | { readonly kind: 'not-started'; readonly code: number; readonly message: string; readonly interrupted?: NodeJS.Signals }
  /** The window ended first and the command was stopped, or it failed after the window had ended. */
  | {
      readonly kind: 'lost';
      readonly code: number;
      readonly reason: StopReason;
      readonly exit: CommandExit;
      /** True when the command ended by itself, failing, after the window had ended (baton saw it late). */
      readonly overdue: boolean;
      readonly interrupted?: NodeJS.Signals;
    };

/** TermRun is a running term: wait on `done`; forward signals; stop it early. */
export interface TermRun {
  readonly done: Promise<TermOutcome>;
  /** signal forwards an operator's signal to the command's process group (remembered in the outcome). */
  signal(sig: NodeJS.Signals): void;
  /**
   * stop ends the command now: SIGTERM, then SIGKILL no later than the window allows (or
   * `graceMs`). If the window still lasts, the outcome is `lost` with reason 'stopped' and
   * onLost is not called.
   */
  stop(graceMs?: number): void;
}

/** batonEnv is the command's environment: ours, plus the term's BATON_* variables. */
export function batonEnv(window: LeadershipWindow, command: TermCommand, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...base, BATON_LOCK: command.lock, BATON_IDENTITY: command.identity, BATON_TERM: String(window.term), ...command.env };
}

/** exitCodeOf is a command's shell-style exit code: its code, or 128 + the signal that ended it. */
export function exitCodeOf(x: CommandExit): number {
  if (x.code !== null) return x.code;
  if (x.signal) return signalExitCode(x.signal);
  return 1;
}

/** runTerm runs `command` for one leadership window (see the steps above). */
export function runTerm(window: LeadershipWindow, command: TermCommand): TermRun {
  const supervisor = new Supervisor(window, command.argv, batonEnv(window, command));
  let interrupted: NodeJS.Signals | undefined;
  let lostReason: StopReason | undefined;
  /** Set when the caller stopped the command (shutdown, a job stopping): not a lost term. */
  let stoppedByCaller = false;
  const lost = (reason: StopReason) => {
    if (lostReason !== undefined) return;
    lostReason = reason;
    command.onLost?.(reason);
  };
  const onEnd = () => {
    // 3. The window ended while the command runs: stop it before anyone else can lead.
    lost(window.signal.reason as StopReason);
    supervisor.stop();
  };
  if (window.signal.aborted) onEnd();
  else window.signal.addEventListener('abort', onEnd, { once: true });

  const done = supervisor.exited.then((exit): TermOutcome => {
    window.signal.removeEventListener('abort', onEnd);
    const code = exitCodeOf(exit);
    const also = interrupted ? { interrupted } : {};
    if (exit.spawnError) return { kind: 'not-started', code: exit.code ?? ExitCode.commandNotFound, message: exit.spawnError, ...also };
    if (lostReason !== undefined) return { kind: 'lost', code, reason: lostReason, exit, overdue: false, ...also };
    // The watchdog ended it at the deadline: leadership ended first, whatever baton has seen.
    // (Unless the caller asked for it: stop() moves the deadline to now.)
    if (exit.stoppedAtDeadline && stoppedByCaller && !windowEnded(window)) return { kind: 'lost', code, reason: 'stopped', exit, overdue: false, ...also };
    if (exit.stoppedAtDeadline) {
      lost(window.signal.aborted ? (window.signal.reason as StopReason) : 'renew-deadline');
      return { kind: 'lost', code, reason: lostReason!, exit, overdue: false, ...also };
    }
    // 4. Overdue: a failure after the window had ended is the cut, not the command's own.
    if (code !== 0 && !interrupted && windowEnded(window)) {
      lost('renew-deadline');
      return { kind: 'lost', code, reason: 'renew-deadline', exit, overdue: true, ...also };
    }
    return { kind: 'exited', code, exit, ...also };
  });
  return {
    done,
    signal(sig) {
      interrupted ??= sig;
      supervisor.signal(sig);
    },
    stop(graceMs) {
      stoppedByCaller = true;
      supervisor.stop(graceMs);
    },
  };
}

/**
 * TermExits holds, per term, when that term's command has exited, for the elector's
 * `beforeRelease`: a lease is released only once the command of its term is dead, whatever
 * ended the term (a step-down asked for, a drain, a signal to baton, hung work). Only the
 * latest term is kept: a runner starts a term's command only after the previous one exited.
 */
export class TermExits {
  private term?: number;
  private exited: Promise<unknown> = Promise.resolve();

  /** track records the command run for `term`. */
  track(term: number, run: TermRun): void {
    this.term = term;
    this.exited = run.done.catch(() => {});
  }

  /** beforeRelease resolves once the command of `term` (if one ran for it) has exited. */
  readonly beforeRelease = async (term: number): Promise<void> => {
    if (term === this.term) await this.exited;
  };
}
