/**
 * How a term's outcome (term-runner.ts) is recorded by the jobs (cron slots, once keys): the
 * same rules for both, so a cut is a cut whichever job ran the command.
 */
import type { RunOutcome } from '../jobs/runner.js';
import type { TermOutcome } from './term-runner.js';

/**
 * jobOutcome turns a term's outcome into a job's RunOutcome. `what` names what was held
 * ("leadership", "lock") in the recorded reason. A command that failed after an operator's
 * signal is cut (another instance may run it), not failed.
 */
export function jobOutcome(outcome: TermOutcome, what: string, name: string | undefined): RunOutcome {
  switch (outcome.kind) {
    case 'not-started':
      return { kind: 'exit', exitCode: outcome.code, error: `cannot run ${name}: ${outcome.message}` };
    case 'lost':
      // An overdue failure: baton stalled past its deadline and the watchdog (or the end of the
      // term) stopped the command before baton saw the term end.
      if (outcome.overdue) return { kind: 'cut', reason: `${what} lost while it ran (renew deadline passed)`, exitCode: outcome.code };
      return { kind: 'cut', reason: `${what} lost (${outcome.reason})`, exitCode: outcome.code };
    case 'exited':
      if (outcome.interrupted && outcome.code !== 0) return { kind: 'cut', reason: `interrupted by ${outcome.interrupted}`, exitCode: outcome.code };
      return { kind: 'exit', exitCode: outcome.code, signal: outcome.exit.signal };
  }
}
