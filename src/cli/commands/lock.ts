import { Command, Option } from 'commander';
import { UsageError } from '../../core/errors.js';
import { ExitCode } from '../exit-codes.js';
import { formatDuration, parseDuration } from '../../core/duration.js';
import { hostClock } from '../../jobs/host-clock.js';
import { killLeadMs, tryTaskLock, validateTaskLockOptions, type TaskLockHold } from '../../jobs/task-lock.js';
import { CliExit, info, openCliStore, requireCommand, requireLock, resolveIdentity, storeTarget, warn, withLockOption, withOutputOptions, withStoreOption, type CommonOptions } from '../common.js';
import { examples } from '../help.js';
import { fixedWindow } from '../leadership-window.js';
import { onTerminationSignals, signalExitCode } from '../signals.js';
import { runTerm } from '../term-runner.js';

interface LockCliOptions extends CommonOptions {
  atMostFor?: string;
  atLeastFor?: string;
}

/** register adds `baton lock`. */
export function register(program: Command): void {
  const cmd = program
    .command('lock')
    .summary('run a command if the task lock is free, skip it otherwise (ShedLock semantics)')
    .description(
      'Take the task lock and run COMMAND, or — if another run holds it — exit 0 at once without ' +
        'running it (said on stderr). --at-most-for: the lock counts as released after this long even if ' +
        'the holder crashed; COMMAND is stopped (SIGTERM, then SIGKILL) shortly before it. --at-least-for: ' +
        'the lock stays held this long after the start even if COMMAND ends sooner (baton exits at once), ' +
        'so hosts whose clocks differ do not run the same scheduled task twice. Durations are counted on ' +
        'each host\'s own monotonic clock, never compared across hosts. COMMAND gets BATON_LOCK, ' +
        'BATON_TERM (a counter of runs under this lock) and BATON_IDENTITY. Exit: COMMAND\'s code, 0 if ' +
        'skipped, 75 if COMMAND was stopped at --at-most-for.',
    )
    .argument('<command...>', 'the command to run, after --');
  withStoreOption(cmd);
  withLockOption(cmd);
  withOutputOptions(cmd);
  cmd
    .addOption(new Option('--identity <id>', 'this holder\'s identity (default: <hostname>-<pid>-<random>)').env('BATON_IDENTITY'))
    .addOption(new Option('--at-most-for <d>', 'the lock is released after this long even if the holder never releases it (required)'))
    .addOption(new Option('--at-least-for <d>', 'keep the lock at least this long after the start (default 0)'))
    .addHelpText(
      'after',
      examples([
        ['a crontab line every instance has; one runs the report, the others skip it', '0 3 * * * baton lock --lock nightly-report --at-most-for 1h --at-least-for 10m -- ./report.sh'],
        ['skip if the previous run is still going', 'baton lock --lock sync --at-most-for 15m -- ./sync.sh'],
      ]),
    )
    .action(async (words: string[], opts: LockCliOptions) => {
      const name = requireLock(opts);
      if (opts.atMostFor === undefined) throw new UsageError('lock: missing --at-most-for DURATION (e.g. --at-most-for 10m)');
      const argv = requireCommand(words, 'lock', 'baton lock --lock NAME --at-most-for 10m -- ./job.sh');
      const durations = validateTaskLockOptions(
        {
          atMostForMs: parseDuration(opts.atMostFor, '--at-most-for'),
          atLeastForMs: opts.atLeastFor !== undefined ? parseDuration(opts.atLeastFor, '--at-least-for') : 0,
        },
        { atMostFor: '--at-most-for', atLeastFor: '--at-least-for', typed: { atMostFor: opts.atMostFor.trim(), atLeastFor: opts.atLeastFor?.trim() } },
      );
      const identity = resolveIdentity(opts);
      const store = await openCliStore(storeTarget(opts));
      try {
        const attempt = await tryTaskLock(store, name, { ...durations, identity });
        if (!attempt.acquired) {
          const why = attempt.phase === 'cooling' ? 'its last run ended, but --at-least-for has not passed' : 'it is running';
          info(`lock "${name}" is held by ${attempt.holder ?? 'someone'} (${why}; free in at most ${formatDuration(attempt.remainingMs)} as this host counts); not running ${argv[0]}`);
          throw new CliExit(ExitCode.ok);
        }
        throw new CliExit(await runHolding(attempt.hold, argv, durations.atMostForMs));
      } finally {
        await store.close().catch(() => {});
      }
    });
}

async function runHolding(hold: TaskLockHold, argv: string[], atMostForMs: number): Promise<number> {
  // The hold started (on the host clock) before its write; express that on performance.now() for the watchdog.
  const startedMs = performance.now() - (hostClock.monotonicMs() - hold.startedMs);
  const window = fixedWindow(hold.term, startedMs, atMostForMs - killLeadMs(atMostForMs), atMostForMs);
  const run = runTerm(window, { argv, lock: hold.name, identity: hold.identity });
  const offSignals = onTerminationSignals((sig) => run.signal(sig));
  try {
    const outcome = await run.done;
    const overran = outcome.kind === 'lost';
    if (outcome.kind === 'not-started') warn(`cannot run ${argv[0]}: ${outcome.message}`, 'not-started');
    if (overran) warn(`${argv[0]} was still running at --at-most-for (${formatDuration(atMostForMs)}); stopped`);
    const code = outcome.code;
    const kept = await hold.finish({ ok: code === 0, detail: overran ? 'stopped at at-most-for' : code !== 0 ? `exit ${code}` : undefined });
    if (kept === 'lost') info(`lock "${hold.name}" was taken over before ${argv[0]} ended`);
    if (outcome.interrupted) return code === 0 ? 0 : signalExitCode(outcome.interrupted);
    return overran ? ExitCode.tempFail : code;
  } finally {
    offSignals();
  }
}
