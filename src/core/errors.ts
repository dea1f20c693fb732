/**
 * Errors thrown by baton. Every error baton throws on purpose is a `BatonError`, and each class
 * is named after the condition it reports. They carry no exit code: the CLI maps conditions to
 * exit codes in one place (cli/exit-codes.ts).
 *
 * A lost race is never an error (stores return it as a value); these are for failures.
 */

/** BatonError is the base class of every error baton throws deliberately. */
export class BatonError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** InvalidConfigError names an option, URL or value that cannot be used. */
export class InvalidConfigError extends BatonError {}

/** UsageError is a command line that cannot be understood. */
export class UsageError extends BatonError {}

/**
 * StoreUnavailableError means the store could not be reached or answered with a failure.
 * Stores translate their SDK's errors into this inside their own folder.
 */
export class StoreUnavailableError extends BatonError {}

/** LeaseLostError means leadership was lost, or was not won in time. */
export class LeaseLostError extends BatonError {}

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
