/**
 * How a job's work is run, shared by the library twins (which run a function) and the CLI
 * (which runs a command under the watchdog). The jobs decide *whether* to run; a runner only
 * runs and reports how the run ended.
 */
import { errorMessage } from '../core/errors.js';

/** RunOutcome is how one run ended. */
export type RunOutcome =
  /** The work finished by itself; exitCode 0 is success. */
  | { readonly kind: 'exit'; readonly exitCode: number; readonly signal?: string | null; readonly error?: string }
  /** The work was stopped before it finished: leadership or the lock's deadline ended, or an operator interrupted it. */
  | { readonly kind: 'cut'; readonly reason: string; readonly exitCode?: number | null };

/** RunContext is what a runner is given for one run. */
export interface RunContext {
  /** The fencing token of the leadership (or lock hold) the run belongs to. */
  readonly term: number;
  /** Aborted when the run must stop (leadership lost, deadline reached, job stopped). */
  readonly signal: AbortSignal;
  /** Environment for a command: BATON_LOCK, BATON_TERM and the job's own variables. */
  readonly env: Readonly<Record<string, string>>;
}

/** Runner runs the work once and resolves with how it ended; it must not reject. */
export type Runner = (ctx: RunContext) => Promise<RunOutcome>;

/** JobFunction is the work of a library job: honour `signal`, it is the only way to be stopped. */
export type JobFunction<C, T = unknown> = (ctx: C) => T | Promise<T>;

/**
 * functionRunner wraps a function as a Runner: resolved = exit 0, thrown = exit 1 (or the
 * error's numeric `exitCode`), and `cut` when the signal was aborted before the function
 * settled. A function cannot be killed: the runner waits for it to settle even after the
 * abort, so the job never starts a second run beside a first one that ignores its signal.
 */
export function functionRunner<C extends RunContext, T>(fn: JobFunction<C, T>, ctx: C, sink?: { value?: T }): Promise<RunOutcome> {
  return (async (): Promise<RunOutcome> => {
    try {
      const value = await fn(ctx);
      if (sink) sink.value = value;
      if (ctx.signal.aborted) return { kind: 'cut', reason: reasonOf(ctx.signal) };
      return { kind: 'exit', exitCode: 0 };
    } catch (err) {
      if (ctx.signal.aborted) return { kind: 'cut', reason: reasonOf(ctx.signal) };
      const code = (err as { exitCode?: unknown })?.exitCode;
      return { kind: 'exit', exitCode: typeof code === 'number' && code > 0 ? code : 1, error: errorMessage(err) };
    }
  })();
}

/** reasonOf renders an AbortSignal's reason in one line. */
export function reasonOf(signal: AbortSignal): string {
  return signal.reason === undefined ? 'aborted' : errorMessage(signal.reason);
}

/** isSuccess tells whether an outcome is a finished run with exit code 0. */
export function isSuccess(o: RunOutcome): boolean {
  return o.kind === 'exit' && o.exitCode === 0;
}
