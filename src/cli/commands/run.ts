import { Command, Option } from 'commander';
import { InvalidConfigError, LeaseLostError } from '../../core/errors.js';
import { ExitCode } from '../exit-codes.js';
import { parseDuration } from '../../core/duration.js';
import type { ElectedEvent, LeaderElector, StoppedEvent } from '../../core/elector.js';
import { STEP_DOWN_INSTANCE_LEAVING } from '../../core/step-down.js';
import {
  CliExit,
  info,
  makeElector,
  openCliStore,
  requireCommand,
  requireLock,
  resolveIdentity,
  resolveTimingOptions,
  storeTarget,
  warn,
  withLockOption,
  withOutputOptions,
  withStoreOption,
  withTimingOptions,
  type CommonOptions,
} from '../common.js';
import { reportStandby } from '../standby.js';
import { electorWindow } from '../leadership-window.js';
import { onTerminationSignals, signalExitCode } from '../signals.js';
import { TermExits, batonEnv, runTerm, type TermRun } from '../term-runner.js';
import { examples } from '../help.js';
import { WorkHealth, hangBaseMs, resolveWorkHealth, withWorkHealthOptions, type WorkHealthFlags } from '../work-health.js';
import { HangStreak } from '../../core/hang-backoff.js';
import { formatDuration } from '../../core/duration.js';
import { answerSystemdWatchdog } from '../sd-watchdog.js';
import { checkCandidateStore, resolveCandidate, withCandidateOptions, type CandidateFlags } from '../candidate-flags.js';

interface RunOptions extends CommonOptions, WorkHealthFlags, CandidateFlags {
  keepRunning?: boolean;
  timeout?: string;
}

/** register adds `baton run`. */
export function register(program: Command): void {
  const cmd = program
    .command('run')
    .summary('run a command while this instance leads')
    .description(
      'Campaign for the lock; when elected, run COMMAND with BATON_LOCK, BATON_IDENTITY and BATON_TERM ' +
        '(the fencing token) set. While another instance leads, say so on stderr (once, and again when the ' +
        'leader changes). If leadership is lost the command is stopped (SIGTERM, then SIGKILL) ' +
        'before any other instance can be elected, and baton exits 75 — or 79 when it was asked to step ' +
        'down because this instance is leaving (`baton aws drain`; list 79 in systemd\'s ' +
        'RestartPreventExitStatus=). When the command exits, the lease is released and baton exits ' +
        'with its code. With --progress-timeout the command gets systemd\'s watchdog variables ' +
        '(NOTIFY_SOCKET, WATCHDOG_USEC, WATCHDOG_PID) and BATON_HEARTBEAT_FILE; if it sends no ' +
        'heartbeat in time (or --health-cmd keeps failing) it is stopped, the lease released, and baton ' +
        'exits 80 — or, with --keep-running, backs off (growing, up to 10m) before campaigning again.',
    )
    .argument('<command...>', 'the command to run, after --');
  withStoreOption(cmd);
  withLockOption(cmd);
  withTimingOptions(cmd);
  withOutputOptions(cmd);
  withWorkHealthOptions(cmd);
  withCandidateOptions(cmd);
  cmd
    .option('--keep-running', 'after the command exits or leadership is lost, campaign again and rerun it')
    .addOption(new Option('--timeout <d>', 'give up campaigning after this long (exit 75); with --keep-running, for each campaign, not counting the pause after a release'))
    .addHelpText(
      'after',
      examples([
        ['run a consumer on one instance of the fleet at a time', 'baton run --lock orders-consumer -- node consumer.js'],
        ['keep a singleton alive across failures, against a shared store', 'BATON_STORE=postgres://baton@db/ops baton run --lock reaper --keep-running -- ./reaper.sh'],
        ['try for at most a minute', 'baton run --lock report --timeout 1m -- ./report.sh'],
        ['hand over when a systemd-style worker stops sending WATCHDOG=1 for 30s', 'baton run --lock worker --keep-running --progress-timeout 30s -- ./worker'],
        ['a script that touches $BATON_HEARTBEAT_FILE after each batch', 'baton run --lock sync --progress-timeout 5m -- ./sync.sh'],
        ['a rolling deploy moves leadership once: to the first instance of the new version', 'baton run --lock consumer --keep-running --app-version 2.4.1 --prefer newest -- ./consumer'],
        ['step down when the downstream is unreachable three times in a row', 'baton run --lock consumer --health-cmd "curl -fsS localhost:8080/healthz" --health-interval 10s --health-failures 3 -- ./consumer'],
      ]),
    )
    .action(async (words: string[], opts: RunOptions) => {
      const lock = requireLock(opts);
      const argv = requireCommand(words, 'run');
      const timeoutMs = opts.timeout !== undefined ? parseDuration(opts.timeout, '--timeout') : undefined;
      const timing = resolveTimingOptions(opts);
      const healthSettings = resolveWorkHealth(opts);
      const candidate = resolveCandidate(opts);
      resolveIdentity(opts);
      const store = await openCliStore(storeTarget(opts));
      const note = checkCandidateStore(store, candidate);
      if (note) warn(note, 'no-registry');
      // A term's lease is released only once its command has exited (whatever ended the term:
      // a step-down asked for, a drain, SIGTERM, a hung command): runLoop records each term's exit.
      const exits = new TermExits();
      const elector = makeElector(store, opts, lock, timing, { beforeRelease: exits.beforeRelease, candidate });
      const health = await WorkHealth.open(healthSettings, (path) =>
        warn(`no NOTIFY_SOCKET: python3 could not be run or could not bind ${path}; the command gets BATON_HEARTBEAT_FILE only (docs/watchdog.md)`, 'no-notify-socket'),
      );
      const stopAnswering = answerSystemdWatchdog((why) => warn(why, 'no-systemd-watchdog'));
      try {
        throw new CliExit(await runLoop(elector, argv, { keepRunning: !!opts.keepRunning, timeoutMs, health, exits }));
      } finally {
        await elector.stop().catch(() => {});
        stopAnswering();
        health.close();
        await store.close().catch(() => {});
      }
    });
}

/** runLoop campaigns, runs the command for each term won (term-runner.ts), and returns baton's exit code. */
async function runLoop(elector: LeaderElector, argv: string[], o: { keepRunning: boolean; timeoutMs?: number; health: WorkHealth; exits: TermExits }): Promise<number> {
  const watching = o.health.settings.progressTimeoutMs !== undefined || o.health.settings.health !== undefined;
  const streak = new HangStreak(hangBaseMs(o.health.settings));
  // A hung command is stopped like one whose leadership ended: SIGTERM, then SIGKILL after the
  // same gap the kill schedule leaves (leadership-window.ts), or sooner if the lease demands.
  const hungGraceMs = (elector.timing.leaseDurationMs - elector.timing.renewDeadlineMs) / 2;
  let interrupted: NodeJS.Signals | undefined;
  let current: TermRun | undefined;
  const giveUp = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    interrupted = sig;
    if (current) current.signal(sig);
    else giveUp.abort(new CliExit(signalExitCode(sig)));
  };
  const offSignals = onTerminationSignals(onSignal);
  const offReports = reportStandby(elector, { onFatal: (err) => giveUp.abort(err) });
  let pauseMs = 0;
  try {
    elector.start();
    for (;;) {
      const won = await campaign(elector, giveUp.signal, o.timeoutMs === undefined ? undefined : o.timeoutMs + pauseMs);
      info(`elected leader of "${elector.lock}" as ${elector.identity} (term ${won.term}); starting ${argv[0]}`, 'elected', { lock: elector.lock, identity: elector.identity, term: won.term });
      let stopping: Promise<void> | undefined;
      // A step-down asked for because this host is going away (`baton aws drain`): listened to
      // before the window is made, so it is known when onLost runs.
      let leaving = false;
      // A directed handover (`baton handover`, a preference rule): the lost line names the successor.
      let handedTo: string | undefined;
      const onStopped = (e: StoppedEvent) => {
        if (e.term === won.term && e.note === STEP_DOWN_INSTANCE_LEAVING) leaving = true;
        if (e.term === won.term && e.reason === 'handover') handedTo = e.note?.replace(/^to /, '');
      };
      elector.on('stopped', onStopped);
      const window = electorWindow(elector, won.term);
      const command = { argv, lock: elector.lock, identity: elector.identity, env: o.health.env() };
      let hungWhy: string | undefined;
      const termStartMs = performance.now();
      const term = (current = runTerm(window, {
        ...command,
        onLost: (reason) => {
          const why = leaving ? ': this instance is leaving' : handedTo !== undefined ? ` to ${handedTo}` : '';
          warn(`leadership of "${elector.lock}" lost (${reason}${why}); stopping ${argv[0]}`, 'lost', { lock: elector.lock, reason, ...(leaving ? { leaving: true } : {}), ...(handedTo !== undefined ? { to: handedTo } : {}) });
          // Not running again: stop campaigning now, or the elector may win the lease back (a new
          // term, for nothing) while the command is still shutting down.
          if (interrupted || !o.keepRunning || leaving) stopping = elector.stop();
        },
      }));
      o.exits.track(won.term, term);
      // The work's health (issue 28): hung → stop the command first, and only once it is dead
      // release the lease (below), so it has stopped before anyone else can start.
      const watch = watching
        ? o.health.watch(batonEnv(window, command), (why) => {
            hungWhy = why;
            warn(`the work under "${elector.lock}" is hung: ${why}; stopping ${argv[0]} and stepping down`, 'hung', { lock: elector.lock, term: won.term, why });
            term.stop(hungGraceMs);
          })
        : undefined;
      const outcome = await current.done;
      watch?.close();
      current = undefined;
      elector.off('stopped', onStopped);
      if (hungWhy !== undefined) {
        const backoffMs = streak.hung(performance.now() - termStartMs);
        const note = hungWhy;
        if (interrupted || !o.keepRunning || leaving) {
          await elector.resign({ reason: 'hung', note });
          await (stopping ?? elector.stop());
          return interrupted ? signalExitCode(interrupted) : leaving ? ExitCode.leaving : ExitCode.hung;
        }
        info(`released "${elector.lock}"; campaigning again in ${formatDuration(backoffMs)} (hung ${streak.count} time${streak.count === 1 ? '' : 's'} in a row)`, 'backoff', { lock: elector.lock, backoffMs, streak: streak.count });
        await elector.resign({ reason: 'hung', note, holdOffMs: backoffMs });
        pauseMs = backoffMs;
        continue;
      }
      streak.healthy();
      if (outcome.kind === 'lost' && leaving) {
        // Handed over because this host is leaving: done (79), whatever --keep-running says.
        await (stopping ?? elector.stop());
        return interrupted ? signalExitCode(interrupted) : ExitCode.leaving;
      }
      if (outcome.kind === 'lost') {
        await stopping;
        // Lost because the store refuses this account something for good (a Role without
        // update): that, not a lost lease, is the answer (78), with or without --keep-running.
        if (!interrupted && giveUp.signal.reason instanceof InvalidConfigError) {
          await elector.stop();
          throw giveUp.signal.reason;
        }
        if (interrupted || !o.keepRunning) return interrupted ? signalExitCode(interrupted) : ExitCode.tempFail;
        pauseMs = 0;
        continue;
      }
      if (outcome.kind === 'not-started') warn(`cannot run ${argv[0]}: ${outcome.message}`, 'not-started');
      if (interrupted || !o.keepRunning || outcome.kind === 'not-started') return outcome.code;
      info(`${argv[0]} exited with ${outcome.code}; releasing and campaigning again`);
      // resign() holds this candidate back for a retry period (with jitter) so another can win
      // first: that pause is baton's choice, so it does not count against --timeout.
      pauseMs = Math.ceil(elector.timing.retryPeriodMs * (1 + elector.timing.jitterFactor));
      await elector.resign();
    }
  } finally {
    offReports();
    offSignals();
  }
}

async function campaign(elector: LeaderElector, giveUp: AbortSignal, timeoutMs?: number): Promise<ElectedEvent> {
  const signals: AbortSignal[] = [giveUp];
  if (timeoutMs !== undefined) signals.push(AbortSignal.timeout(timeoutMs));
  try {
    return await elector.elected({ signal: AbortSignal.any(signals) });
  } catch (err) {
    if (err instanceof CliExit || err instanceof InvalidConfigError) throw err;
    throw new LeaseLostError(`run: not elected leader of "${elector.lock}" within the --timeout (held by ${elector.leader()?.holder ?? 'nobody'})`);
  }
}

