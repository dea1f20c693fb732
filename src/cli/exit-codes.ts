/**
 * Exit codes: the one place where a condition (an error class) becomes a number. The library's
 * errors are named after what went wrong and carry no exit code; the CLI (and results meant
 * for it, such as `aws drain`'s) map them here, sysexits-style. Every way a command ends goes
 * through `exitCodeFor`: a thrown error, a command-line error from commander, or a `CliExit`
 * carrying the code a command decided on (a check's answer, its child's exit code).
 */
import { CommanderError } from 'commander';
import { InvalidConfigError, LeaseLostError, StoreUnavailableError, UsageError } from '../core/errors.js';
import { AwsUnavailableError } from '../aws/errors.js';
import { ReconcileError } from '../aws/reconcile.js';
import { StaleTermError } from '../jobs/fencing.js';

/** ExitCode names the codes baton exits with (sysexits.h where one fits). */
export const ExitCode = {
  ok: 0,
  /** A check answered no (is-leader, release, once --status). */
  no: 1,
  usage: 64,
  /** The store (or AWS) could not be reached. */
  unavailable: 69,
  /** A bug or an unexpected failure. */
  software: 70,
  /** Leadership was lost or not won in time; a stale term; try again. */
  tempFail: 75,
  config: 78,
  /** The command to run was not found or is not executable (as a shell says). */
  commandNotFound: 127,
} as const;

/** CliExit ends a command with a code after it has printed what it had to say. */
export class CliExit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

// Order matters only where classes extend each other (AwsRequestError is an InvalidConfigError).
const BY_CONDITION: ReadonlyArray<readonly [abstract new (...args: never[]) => Error, number]> = [
  [UsageError, ExitCode.usage],
  // commander has already printed its one line (main.ts configures how).
  [CommanderError, ExitCode.usage],
  [InvalidConfigError, ExitCode.config],
  [StoreUnavailableError, ExitCode.unavailable],
  [AwsUnavailableError, ExitCode.unavailable],
  [LeaseLostError, ExitCode.tempFail],
  [StaleTermError, ExitCode.tempFail],
  [ReconcileError, ExitCode.tempFail],
];

/** exitCodeFor is the code the CLI exits with for `err`: by its condition, else 70 (software). */
export function exitCodeFor(err: unknown): number {
  if (err instanceof CliExit) return err.code;
  for (const [condition, code] of BY_CONDITION) if (err instanceof condition) return code;
  return ExitCode.software;
}
