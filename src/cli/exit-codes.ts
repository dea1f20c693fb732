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
  /** A check answered no (is-leader, release, handover, once --status). */
  no: 1,
  usage: 64,
  /** The store (or AWS) could not be reached. */
  unavailable: 69,
  /** A bug or an unexpected failure. */
  software: 70,
  /** Leadership was lost or not won in time; a stale term; try again. */
  tempFail: 75,
  config: 78,
  /**
   * Stepped down because this host is leaving (a step-down requested with the reason
   * STEP_DOWN_INSTANCE_LEAVING, by `baton aws drain`): done, not a failure. Supervisors list
   * it in RestartPreventExitStatus= so a dying instance does not campaign again.
   */
  leaving: 79,
  /**
   * `run --progress-timeout` / `--health-cmd` stepped down because the work was hung (no
   * heartbeat in time, or the health command kept failing): the command was stopped and the
   * lease released so another instance took over (docs/watchdog.md).
   */
  hung: 80,
  /** The command to run is not executable (as a shell says). */
  notExecutable: 126,
  /** The command to run was not found (as a shell says). */
  commandNotFound: 127,
} as const;

/**
 * EXIT_CODES: every code baton can exit with and what it means — the list `baton --help` and
 * the README print (a test checks the README against it).
 */
export const EXIT_CODES: ReadonlyArray<readonly [code: string, meaning: string]> = [
  ['0', 'success (or the command\'s own 0)'],
  ['1', 'a check answered no: is-leader, release (not held by ID), handover (ID not a live candidate, or not held), once --status (not done)'],
  ['64', 'usage: the command line cannot be understood (unknown command or flag, missing value)'],
  ['69', 'the store (or AWS) cannot be reached'],
  ['70', 'a bug in baton: please report it'],
  ['75', 'leadership lost or not won in time (--timeout); a stale term; try again'],
  ['78', 'configuration: a value that cannot be used (duration, URL, lock name, schema)'],
  ['79', 'run stepped down because this instance is leaving (baton aws drain): done, do not restart'],
  ['80', 'run stepped down because its command was hung: no heartbeat within --progress-timeout, or --health-cmd failing (docs/watchdog.md)'],
  ['126', 'the command to run is not executable'],
  ['127', 'the command to run was not found'],
  ['128+N', 'baton or the command was ended by signal N (130 for SIGINT, 143 for SIGTERM)'],
  ['other', 'the command\'s own exit code (run, once, lock)'],
];

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
