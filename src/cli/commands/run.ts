import { Command, Option } from 'commander';
import { LeaseLostError } from '../../core/errors.js';
import { ExitCode } from '../exit-codes.js';
import { parseDuration } from '../../core/duration.js';
import type { ElectedEvent, LeaderElector } from '../../core/elector.js';
import {
  CliExit,
  info,
  makeElector,
  openCliStore,
  requireCommand,
  requireLock,
  withLockOption,
  withStoreOption,
  withTimingOptions,
  type CommonOptions,
} from '../common.js';
import { electorWindow } from '../leadership-window.js';
import { onTerminationSignals, signalExitCode } from '../signals.js';
import { runTerm, type TermRun } from '../term-runner.js';

interface RunOptions extends CommonOptions {
  keepRunning?: boolean;
  timeout?: string;
}

/** register adds `baton run`. */
export function register(program: Command): void {
  const cmd = program
    .command('run')
    .summary('run a command while this instance leads')
    .description(
      'Campaign for the lock; when elected, run COMMAND with BATON_LOCK, BATON_IDENTITY and BATON_TERM\n' +
        '(the fencing token) set. If leadership is lost the command is stopped (SIGTERM, then SIGKILL)\n' +
        'before any other instance can be elected, and baton exits 75. When the command exits, the\n' +
        'lease is released and baton exits with its code.',
    )
    .argument('<command...>', 'the command to run, after --');
  withStoreOption(cmd);
  withLockOption(cmd);
  withTimingOptions(cmd);
  cmd
    .option('--keep-running', 'after the command exits or leadership is lost, campaign again and rerun it')
    .addOption(new Option('--timeout <d>', 'give up campaigning after this long (exit 75)'))
    .action(async (words: string[], opts: RunOptions) => {
      const lock = requireLock(opts);
      const argv = requireCommand(words, 'run');
      const timeoutMs = opts.timeout !== undefined ? parseDuration(opts.timeout, '--timeout') : undefined;
      const store = await openCliStore(opts);
      const elector = makeElector(store, opts, lock);
      try {
        throw new CliExit(await runLoop(elector, argv, { keepRunning: !!opts.keepRunning, timeoutMs }));
      } finally {
        await elector.stop().catch(() => {});
        await store.close().catch(() => {});
      }
    });
}

/** runLoop campaigns, runs the command for each term won (term-runner.ts), and returns baton's exit code. */
async function runLoop(elector: LeaderElector, argv: string[], o: { keepRunning: boolean; timeoutMs?: number }): Promise<number> {
  let interrupted: NodeJS.Signals | undefined;
  let current: TermRun | undefined;
  const giveUp = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    interrupted = sig;
    if (current) current.signal(sig);
    else giveUp.abort(new CliExit(signalExitCode(sig)));
  };
  const offSignals = onTerminationSignals(onSignal);
  elector.on('storeError', (err) => info(`store error: ${err.message}`));
  try {
    elector.start();
    for (;;) {
      const won = await campaign(elector, giveUp.signal, o.timeoutMs);
      info(`elected leader of "${elector.lock}" as ${elector.identity} (term ${won.term}); starting ${argv[0]}`);
      let stopping: Promise<void> | undefined;
      current = runTerm(electorWindow(elector, won.term), {
        argv,
        lock: elector.lock,
        identity: elector.identity,
        onLost: (reason) => {
          info(`leadership of "${elector.lock}" lost (${reason}); stopping ${argv[0]}`);
          // Not running again: stop campaigning now, or the elector may win the lease back (a new
          // term, for nothing) while the command is still shutting down.
          if (interrupted || !o.keepRunning) stopping = elector.stop();
        },
      });
      const outcome = await current.done;
      current = undefined;
      if (outcome.kind === 'lost') {
        await stopping;
        if (interrupted || !o.keepRunning) return interrupted ? signalExitCode(interrupted) : ExitCode.tempFail;
        continue;
      }
      if (outcome.kind === 'not-started') info(`cannot run ${argv[0]}: ${outcome.message}`);
      if (interrupted || !o.keepRunning || outcome.kind === 'not-started') return outcome.code;
      info(`${argv[0]} exited with ${outcome.code}; releasing and campaigning again`);
      await elector.resign();
    }
  } finally {
    offSignals();
  }
}

async function campaign(elector: LeaderElector, giveUp: AbortSignal, timeoutMs?: number): Promise<ElectedEvent> {
  const signals: AbortSignal[] = [giveUp];
  if (timeoutMs !== undefined) signals.push(AbortSignal.timeout(timeoutMs));
  try {
    return await elector.elected({ signal: AbortSignal.any(signals) });
  } catch (err) {
    if (err instanceof CliExit) throw err;
    throw new LeaseLostError(`run: not elected leader of "${elector.lock}" within the --timeout (held by ${elector.leader()?.holder ?? 'nobody'})`);
  }
}

