/**
 * Running a command while leading, shared by `baton run` and the job commands (cron, once,
 * lock): the command runs under the watchdog (supervisor.ts) for one leadership term and is
 * stopped if that term ends first. The watchdog logic itself lives only in supervisor.ts.
 */
import { constants } from 'node:os';
import { LeaderElector, type StopReason, type StoppedEvent } from '../core/elector.js';
import type { LeaseStore } from '../core/store.js';
import { Supervisor, type CommandExit } from './supervisor.js';

const signals = constants.signals as Record<string, number>;

/** exitCodeOf is a command's shell-style exit code: its code, or 128 + the signal that ended it. */
export function exitCodeOf(x: CommandExit): number {
  if (x.code !== null) return x.code;
  if (x.signal) return 128 + (signals[x.signal] ?? 0);
  return 1;
}

/** signalExitCode is 128 + the signal's number (130 for SIGINT, 143 for SIGTERM). */
export function signalExitCode(sig: NodeJS.Signals): number {
  return 128 + (signals[sig] ?? 15);
}

/**
 * onTerminationSignals calls `handler` on SIGINT, SIGTERM and SIGHUP (instead of Node's default
 * of exiting) until the returned function is called.
 */
export function onTerminationSignals(handler: (sig: NodeJS.Signals) => void): () => void {
  const sigs = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  const listeners = sigs.map((sig) => [sig, () => handler(sig)] as const);
  for (const [sig, h] of listeners) process.on(sig, h);
  return () => {
    for (const [sig, h] of listeners) process.off(sig, h);
  };
}

/** TermRun is how a command run for one term ended: by itself, or stopped because the term ended. */
export type TermRun =
  | { readonly kind: 'exit'; readonly exit: CommandExit }
  /** `note`: the step-down requester's reason (StoppedEvent.note), e.g. STEP_DOWN_INSTANCE_LEAVING. */
  | { readonly kind: 'lost'; readonly reason: StopReason; readonly note?: string; readonly exit: CommandExit };

/**
 * superviseTerm runs `argv` under the watchdog while `elector` leads with `term`. If that
 * leadership ends first (or had already ended), the command is stopped — SIGTERM now, SIGKILL
 * before any other candidate can be elected — and `onLost` is told why. `done` resolves once
 * the command has exited either way.
 */
export function superviseTerm(
  elector: LeaderElector,
  term: number,
  argv: string[],
  env: NodeJS.ProcessEnv,
  onLost?: (reason: StopReason, note?: string) => void,
): { supervisor: Supervisor; done: Promise<TermRun> } {
  const supervisor = new Supervisor(elector, argv, env);
  const lost = new Promise<{ reason: StopReason; note?: string }>((resolve) => {
    if (elector.leadershipWindow()?.term !== term) return resolve({ reason: 'lost' });
    const on = (e: StoppedEvent) => {
      if (e.term === term) {
        elector.off('stopped', on);
        resolve(e);
      }
    };
    elector.on('stopped', on);
    void supervisor.exited.then(() => elector.off('stopped', on));
  });
  const done = (async (): Promise<TermRun> => {
    const first = await Promise.race([supervisor.exited.then((exit) => ({ kind: 'exit' as const, exit })), lost.then((e) => ({ kind: 'lost' as const, ...e }))]);
    if (first.kind === 'exit') {
      // The watchdog ended it at the deadline: leadership ended first, whatever baton has seen.
      if (first.exit.stoppedAtDeadline) {
        onLost?.('renew-deadline');
        return { kind: 'lost', reason: 'renew-deadline', exit: first.exit };
      }
      return first;
    }
    supervisor.stop();
    onLost?.(first.reason, first.note);
    return { kind: 'lost', reason: first.reason, note: first.note, exit: await supervisor.exited };
  })();
  return { supervisor, done };
}

/**
 * DeadlineElector is an elector that is never started: it only gives the supervisor a fixed
 * window — started at `startedPerfMs` (performance.now()), SIGTERM at `termAfterMs`, SIGKILL
 * halfway to `lastMs` — for work bounded by a deadline rather than by a renewed lease (task
 * locks). It never touches the store.
 */
export class DeadlineElector extends LeaderElector {
  constructor(
    store: LeaseStore,
    lock: string,
    private readonly startedPerfMs: number,
    termAfterMs: number,
    lastMs: number,
  ) {
    super({ store, lock, leaseDurationMs: lastMs, renewDeadlineMs: termAfterMs, retryPeriodMs: Math.max(1, termAfterMs / 2), jitterFactor: 0 });
  }

  override leadershipWindow() {
    return {
      term: 0,
      renewStartMs: this.startedPerfMs,
      deadlineMs: this.startedPerfMs + this.timing.renewDeadlineMs,
      othersMayAcquireMs: this.startedPerfMs + this.timing.leaseDurationMs,
    };
  }
}
