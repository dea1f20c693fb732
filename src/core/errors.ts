/**
 * Errors thrown by baton. Every error baton throws on purpose is a `BatonError`; its `exitCode`
 * is the sysexits-style code the CLI exits with, so the library and the CLI agree on meaning.
 *
 * A lost race is never an error (stores return it as a value); these are for failures.
 */

/** Exit codes shared by the CLI and the errors below. */
export const ExitCode = {
  ok: 0,
  no: 1,
  usage: 64,
  unavailable: 69,
  software: 70,
  tempFail: 75,
  config: 78,
  /**
   * Stepped down because this host is leaving (a step-down requested with the reason
   * STEP_DOWN_INSTANCE_LEAVING, e.g. by `baton aws drain`): done, not a failure. Supervisors
   * list it in RestartPreventExitStatus= so a dying instance does not campaign again.
   */
  leaving: 79,
} as const;

/** BatonError is the base class of every error baton throws deliberately. */
export class BatonError extends Error {
  readonly exitCode: number = ExitCode.software;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** InvalidConfigError names an option, URL or value that cannot be used (exit 78). */
export class InvalidConfigError extends BatonError {
  override readonly exitCode: number = ExitCode.config;
}

/** UsageError is a command line that cannot be understood (exit 64). */
export class UsageError extends BatonError {
  override readonly exitCode: number = ExitCode.usage;
}

/**
 * StoreUnavailableError means the store could not be reached or answered with a failure
 * (exit 69). Stores translate their SDK's errors into this inside their own folder.
 */
export class StoreUnavailableError extends BatonError {
  override readonly exitCode: number = ExitCode.unavailable;
}

/** LeaseLostError means leadership was lost, or was not won in time (exit 75). */
export class LeaseLostError extends BatonError {
  override readonly exitCode: number = ExitCode.tempFail;
}

/** StoreClosedError is thrown by a store used after `close()`. */
export class StoreClosedError extends BatonError {
  constructor(what = 'store') {
    super(`${what}: closed`);
  }
}

/** errorMessage returns a one-line description of any thrown value. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message.split('\n')[0] ?? String(err);
  return String(err).split('\n')[0] ?? '';
}
