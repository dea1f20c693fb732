import { Command, Option } from 'commander';
import { UsageError } from '../../core/errors.js';
import { ExitCode } from '../exit-codes.js';
import { parseDuration } from '../../core/duration.js';
import { validateLockName } from '../../core/options.js';
import { defaultOnceLock, readOnceRecord, runOnceWith, type OnceRecord, type OnceResult } from '../../jobs/once.js';
import { validateJobKey } from '../../jobs/ledger-keys.js';
import type { Runner } from '../../jobs/runner.js';
import {
  CliExit,
  info,
  makeElector,
  openCliStore,
  requireCommand,
  resolveIdentity,
  resolveTimingOptions,
  storeTarget,
  warn,
  withOutputOptions,
  withStoreOption,
  withTimingOptions,
  type CommonOptions,
} from '../common.js';
import { examples } from '../help.js';
import { reportStandby } from '../standby.js';
import { jobOutcome } from '../job-outcome.js';
import { electorWindow } from '../leadership-window.js';
import { onTerminationSignals, signalExitCode } from '../signals.js';
import { runTerm, type TermRun } from '../term-runner.js';

interface OnceCliOptions extends CommonOptions {
  key?: string;
  wait?: boolean;
  timeout?: string;
  status?: boolean;
  json?: boolean;
  rerun?: boolean;
}

/** register adds `baton once`. */
export function register(program: Command): void {
  const cmd = program
    .command('once')
    .summary('run a command once per key across the fleet (e.g. migrations per release)')
    .description(
      'Every instance may run the same line. One runs COMMAND; the others wait for it and exit with ' +
        'its recorded exit code. The outcome (exit code, who, when, term) is kept in the store\'s ledger, ' +
        'so instances started later — even after every earlier one was terminated — do not run it again. ' +
        'A failed run is never retried silently: --rerun runs it again. If the runner dies mid-run, ' +
        'another instance runs COMMAND again once the dead runner\'s lease expires: COMMAND must be ' +
        'idempotent. COMMAND gets BATON_KEY, BATON_TERM, BATON_LOCK, BATON_ATTEMPT, BATON_IDENTITY. ' +
        'Exit: COMMAND\'s code (run here or recorded); 0 with --no-wait when another instance is on it; ' +
        '75 on --timeout or when the run was cut off; --status exits 0 if done, 1 otherwise.',
    )
    .argument('[command...]', 'the command to run, after --');
  withStoreOption(cmd);
  withTimingOptions(cmd);
  withOutputOptions(cmd);
  cmd
    .addOption(new Option('--key <key>', 'what is done once, e.g. the release version (required)').env('BATON_ONCE_KEY'))
    .addOption(new Option('--lock <name>', 'lock serialising the runners (default once/KEY)'))
    .option('--no-wait', 'if another instance is running it (or has done it), exit 0 at once')
    .addOption(new Option('--timeout <d>', 'give up waiting for another instance after this long (exit 75)'))
    .option('--status', 'print the recorded outcome of --key and exit (0 if done, 1 if not)')
    .option('--json', 'with --status: print JSON')
    .option('--rerun', 'run again if the recorded outcome is a failure')
    .addHelpText(
      'after',
      examples([
        ['migrations once per deploy, however many instances start at once', 'baton once --key "migrate-$RELEASE" -- npm run migrate'],
        ['did it run? (exit 0 if done)', 'baton once --key "migrate-$RELEASE" --status'],
        ['run a failed attempt again', 'baton once --key "migrate-$RELEASE" --rerun -- npm run migrate'],
      ]),
    )
    .action(async (words: string[], opts: OnceCliOptions) => {
      if (opts.key === undefined) throw new UsageError('once: missing --key KEY (e.g. --key "$RELEASE_VERSION")');
      const key = validateJobKey(opts.key, '--key');
      const lock = opts.lock !== undefined ? validateLockName(opts.lock, '--lock') : defaultOnceLock(key);
      if (opts.status) {
        if (opts.rerun) throw new UsageError('once: --status and --rerun cannot be used together');
        throw new CliExit(await printStatus(opts, key));
      }
      const argv = requireCommand(words, 'once', 'baton once --key KEY -- ./migrate.sh');
      const timeoutMs = opts.timeout !== undefined ? parseDuration(opts.timeout, '--timeout') : undefined;
      const timing = resolveTimingOptions(opts);
      resolveIdentity(opts);
      const store = await openCliStore(storeTarget(opts));
      try {
        const elector = makeElector(store, opts, lock, timing);
        throw new CliExit(await runCommandOnce(store, elector, key, argv, { wait: opts.wait !== false, timeoutMs, rerun: !!opts.rerun }));
      } finally {
        await store.close().catch(() => {});
      }
    });
}

async function printStatus(opts: OnceCliOptions, key: string): Promise<number> {
  const store = await openCliStore(storeTarget(opts, 'read'));
  try {
    const record = await readOnceRecord(store, key);
    process.stdout.write(opts.json ? `${JSON.stringify(record ?? { key, status: 'never-run' })}\n` : `${describe(key, record)}\n`);
    return record?.status === 'done' ? ExitCode.ok : ExitCode.no;
  } finally {
    await store.close().catch(() => {});
  }
}

function describe(key: string, r: OnceRecord | null): string {
  if (!r) return `once ${key}: never run`;
  const exit = r.exitCode !== undefined && r.exitCode !== null ? ` (exit ${r.exitCode})` : '';
  const when = r.finishedAt ? `started ${r.startedAt}, finished ${r.finishedAt}` : `started ${r.startedAt}`;
  const takeover = r.tookOverFrom ? `; took over from ${r.tookOverFrom.identity} (term ${r.tookOverFrom.term})` : '';
  const rerun = r.rerunOf ? `; rerun of failed attempt ${r.rerunOf}` : '';
  return `once ${key}: ${r.status}${exit} by ${r.identity} on ${r.hostname} pid ${r.pid}, term ${r.term}, attempt ${r.attempt}; ${when}${takeover}${rerun}${r.reason ? `; ${r.reason}` : ''}`;
}

async function runCommandOnce(
  store: Parameters<typeof runOnceWith>[0],
  elector: ReturnType<typeof makeElector>,
  key: string,
  argv: string[],
  o: { wait: boolean; timeoutMs?: number; rerun: boolean },
): Promise<number> {
  const name = argv[0];
  let current: TermRun | undefined;
  let interrupted: NodeJS.Signals | undefined;
  const giveUp = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    interrupted ??= sig;
    if (current) current.signal(sig);
    else giveUp.abort(new CliExit(signalExitCode(sig)));
  };
  const offSignals = onTerminationSignals(onSignal);
  const offReports = reportStandby(elector, { waiting: o.wait, onFatal: (err) => giveUp.abort(err) });
  const runner: Runner = async (ctx) => {
    info(`once ${key}: running ${name} (term ${ctx.term}, attempt ${ctx.env.BATON_ATTEMPT})`);
    const run = runTerm(electorWindow(elector, ctx.term), {
      argv,
      lock: elector.lock,
      identity: elector.identity,
      env: ctx.env,
      onLost: (reason) => warn(`once ${key}: lock "${elector.lock}" lost (${reason}); stopping ${name}`, 'lost', { lock: elector.lock, reason }),
    });
    current = run;
    try {
      return jobOutcome(await run.done, 'lock', name);
    } finally {
      current = undefined;
    }
  };
  try {
    const result = await runOnceWith(
      store,
      key,
      {
        lock: elector.lock,
        elector,
        wait: o.wait,
        timeoutMs: o.timeoutMs,
        rerun: o.rerun,
        signal: giveUp.signal,
      },
      runner,
    );
    return report(key, name, result, o.rerun, interrupted);
  } finally {
    offReports();
    offSignals();
  }
}

function report(key: string, name: string | undefined, result: OnceResult, rerun: boolean, interrupted: NodeJS.Signals | undefined): number {
  switch (result.outcome) {
    case 'ran': {
      const code = result.record.exitCode ?? 1;
      info(`once ${key}: ${name} exited with ${code}; recorded as ${result.record.status}`);
      return code;
    }
    case 'cut':
      info(`once ${key}: the run was cut short (${result.run.kind === 'cut' ? result.run.reason : 'stopped'}); another instance will run it again`);
      // An operator's signal ends baton with 128+signal, like `baton run`; a lost lock exits 75.
      return interrupted ? signalExitCode(interrupted) : ExitCode.tempFail;
    case 'busy':
      info(`once ${key}: ${result.holder} is running it (or its lease has not expired yet); not waiting (--no-wait)`);
      return ExitCode.ok;
    case 'recorded': {
      const rec = result.record;
      if (rec.status === 'done') {
        info(`once ${key}: already done by ${rec.identity} on ${rec.hostname} at ${rec.finishedAt ?? rec.startedAt} (exit 0); not running ${name}${rerun ? ' (--rerun only reruns a failed run)' : ''}`);
        return ExitCode.ok;
      }
      const code = rec.exitCode ?? 1;
      info(`once ${key}: failed with exit ${code} on ${rec.hostname} at ${rec.finishedAt ?? rec.startedAt}; not running ${name} again (use --rerun to run it again)`);
      return code === 0 ? 1 : code;
    }
  }
}

