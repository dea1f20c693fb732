import { Command, Option } from 'commander';
import { UsageError } from '../../core/errors.js';
import type { LeaderElector } from '../../core/elector.js';
import type { LeaseStore } from '../../core/store.js';
import { CronJob, type CronRunner } from '../../jobs/cron.js';
import { Schedule, validateMissedPolicy, type MissedPolicy } from '../../jobs/schedule.js';
import { requireLedger } from '../../jobs/ledger-keys.js';
import { formatCronStatus, readCronStatuses } from '../../jobs/cron-status.js';
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
import { examples } from '../help.js';
import { reportStandby } from '../standby.js';
import { InvalidConfigError } from '../../core/errors.js';
import { jobOutcome } from '../job-outcome.js';
import { electorWindow } from '../leadership-window.js';
import { onTerminationSignals } from '../signals.js';
import { TermExits, batonEnv, runTerm, type TermRun } from '../term-runner.js';
import { WorkHealth, hangBaseMs, resolveWorkHealth, withWorkHealthOptions, type WorkHealthFlags } from '../work-health.js';
import { HangStreak } from '../../core/hang-backoff.js';
import { formatDuration } from '../../core/duration.js';
import type { RunOutcome } from '../../jobs/runner.js';
import { statusSections, type StatusSection } from './status.js';
import { checkCandidateStore, resolveCandidate, withCandidateOptions, type CandidateFlags } from '../candidate-flags.js';

interface CronCliOptions extends CommonOptions, WorkHealthFlags, CandidateFlags {
  schedule?: string;
  tz?: string;
  missed?: string;
}

/** register adds `baton cron` and its section of `baton status`. */
export function register(program: Command): void {
  const cmd = program
    .command('cron')
    .summary('run a command on a cron schedule, on the leader only')
    .description(
      'Every instance runs the same line; only the leader of the lock runs the schedule. Each slot is ' +
        'claimed in the store\'s ledger with the leader\'s term before COMMAND starts, so it runs at most ' +
        'once fleet-wide, across failovers, restarts and clocks that disagree. COMMAND gets BATON_SLOT ' +
        '(the scheduled instant, ISO 8601), BATON_TERM, BATON_LOCK and BATON_IDENTITY. A run that ' +
        'outlasts leadership is stopped like `baton run` does and recorded as cut, never retried. ' +
        'Missed slots (after a failover or downtime): --missed latest (default) runs the most recent ' +
        'one once, if it is younger than one interval; --missed skip never catches up. ' +
        'With --progress-timeout each run gets systemd\'s watchdog variables and BATON_HEARTBEAT_FILE; a ' +
        'run that sends no heartbeat in time (or whose --health-cmd keeps failing) is hung: it is stopped, ' +
        'its slot recorded cut (reason "hung: …"), the lease released, and this instance backs off (growing, ' +
        'up to 10m) before campaigning again, so another instance runs the next slots. ' +
        'SIGINT/SIGTERM: forwarded to a running COMMAND; baton records its outcome, releases, exits 0.',
    )
    .argument('<command...>', 'the command to run, after --');
  withStoreOption(cmd);
  withLockOption(cmd);
  withTimingOptions(cmd);
  withOutputOptions(cmd);
  withWorkHealthOptions(cmd);
  withCandidateOptions(cmd);
  cmd
    .addOption(new Option('--schedule <cron>', 'cron expression: 5 fields, or 6 with seconds first (e.g. "*/5 * * * *")').env('BATON_SCHEDULE'))
    .addOption(new Option('--tz <zone>', 'IANA time zone the schedule is read in (default UTC)').env('BATON_TZ'))
    .addOption(new Option('--missed <policy>', 'missed slots: latest (default) or skip'))
    .addHelpText(
      'after',
      examples([
        ['every instance runs this line; the leader runs the job every 5 minutes', 'baton cron --lock cleanup --schedule "*/5 * * * *" -- ./cleanup.sh'],
        ['at 03:00 Paris time, on a shared store, never catching up a missed night', 'baton cron --store postgres://baton@db/ops --lock nightly --schedule "0 3 * * *" --tz Europe/Paris --missed skip -- ./nightly.sh'],
        ['hand the schedule to another instance when a run stops touching $BATON_HEARTBEAT_FILE for 2m', 'baton cron --lock export --schedule "*/10 * * * *" --progress-timeout 2m -- ./export.sh'],
      ]),
    )
    .action(async (words: string[], opts: CronCliOptions) => {
      const lock = requireLock(opts);
      if (opts.schedule === undefined) throw new UsageError('cron: missing --schedule "CRON" (e.g. --schedule "*/5 * * * *")');
      const argv = requireCommand(words, 'cron', 'baton cron --lock NAME --schedule "*/5 * * * *" -- ./job.sh');
      checkFieldCount(opts.schedule);
      const schedule = new Schedule(opts.schedule, opts.tz ?? 'UTC', { schedule: '--schedule', timezone: '--tz' });
      const missed = validateMissedPolicy(opts.missed ?? 'latest', '--missed');
      const timing = resolveTimingOptions(opts);
      const healthSettings = resolveWorkHealth(opts);
      const candidate = resolveCandidate(opts);
      resolveIdentity(opts);
      const store = await openCliStore(storeTarget(opts));
      let health: WorkHealth | undefined;
      try {
        requireLedger(store, 'cron');
        const note = checkCandidateStore(store, candidate);
        if (note) warn(note, 'no-registry');
        const exits = new TermExits();
        const elector = makeElector(store, opts, lock, timing, { beforeRelease: exits.beforeRelease, candidate });
        health = await WorkHealth.open(healthSettings, (path) =>
          warn(`no NOTIFY_SOCKET: python3 could not be run or could not bind ${path}; the command gets BATON_HEARTBEAT_FILE only (docs/watchdog.md)`, 'no-notify-socket'),
        );
        throw new CliExit(await cronLoop(store, elector, argv, schedule, missed, exits, health));
      } finally {
        health?.close();
        await store.close().catch(() => {});
      }
    });
  if (!statusSections.includes(cronSection)) statusSections.push(cronSection);
}

/**
 * checkFieldCount refuses a 7-field expression (a year last, as Quartz writes it): the command
 * line takes 5 fields, or 6 with seconds first, as its help says. Nicknames (@daily) pass.
 */
function checkFieldCount(expression: string): void {
  const fields = expression.trim().split(/\s+/).filter(Boolean);
  if (!expression.trim().startsWith('@') && fields.length > 6) {
    throw new InvalidConfigError(`--schedule: "${expression}" has ${fields.length} fields; baton cron takes 5 (minute hour day month weekday) or 6 (seconds first)`);
  }
}

/** cronSection adds the last cron slots and their outcome to `baton status`. */
const cronSection: StatusSection = async (store, lock, json) => {
  if (!store.ledger) return undefined;
  const statuses = await readCronStatuses(store.ledger, lock);
  if (statuses.length === 0) return undefined;
  return {
    json: { cron: lock ? statuses[0] : statuses },
    byLock: new Map(statuses.map((s) => [s.lock, { cron: s }])),
    text: json ? undefined : statuses.map((s) => formatCronStatus(s)).join('\n'),
  };
};

async function cronLoop(store: LeaseStore, elector: LeaderElector, argv: string[], schedule: Schedule, missed: MissedPolicy, exits: TermExits, health: WorkHealth): Promise<number> {
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((resolve) => (resolveStopped = resolve));
  let current: TermRun | undefined;
  let interrupted: NodeJS.Signals | undefined;
  const name = argv[0];
  // The work's health (issue 28, docs/watchdog.md): as `baton run` does it, per slot's run.
  const watching = health.settings.progressTimeoutMs !== undefined || health.settings.health !== undefined;
  const streak = new HangStreak(hangBaseMs(health.settings));
  const hungGraceMs = (elector.timing.leaseDurationMs - elector.timing.renewDeadlineMs) / 2;
  let termStartMs = performance.now();
  elector.on('elected', () => (termStartMs = performance.now()));
  const runner: CronRunner = async (ctx) => {
    const window = electorWindow(elector, ctx.term);
    const command = { argv, lock: elector.lock, identity: elector.identity, env: { ...ctx.env, ...health.env() } };
    const run = runTerm(window, {
      ...command,
      onLost: (reason) => warn(`leadership of "${elector.lock}" lost (${reason}); stopping ${name} (slot ${ctx.slot.toISOString()})`, 'lost', { lock: elector.lock, reason }),
    });
    current = run;
    exits.track(ctx.term, run);
    const onAbort = () => run.stop();
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    // A hung run is stopped first; the lease is released below, only once it has exited.
    let hungWhy: string | undefined;
    const watch = watching
      ? health.watch(batonEnv(window, command), (why) => {
          hungWhy = why;
          warn(`the work under "${elector.lock}" is hung: ${why}; stopping ${name} (slot ${ctx.slot.toISOString()}) and stepping down`, 'hung', { lock: elector.lock, term: ctx.term, slot: ctx.slot.toISOString(), why });
          run.stop(hungGraceMs);
        })
      : undefined;
    let outcome: RunOutcome;
    try {
      outcome = jobOutcome(await run.done, 'leadership', name);
    } finally {
      watch?.close();
      ctx.signal.removeEventListener('abort', onAbort);
      current = undefined;
    }
    if (hungWhy === undefined) {
      streak.healthy();
      return outcome;
    }
    // Hung: the slot is cut (never retried: at most once), this instance steps down and backs
    // off, and another instance runs the next slots. Resigning here, before the runner returns,
    // ends the term before the job could claim another slot with it.
    const backoffMs = streak.hung(performance.now() - termStartMs);
    if (!interrupted) {
      info(`released "${elector.lock}"; campaigning again in ${formatDuration(backoffMs)} (hung ${streak.count} time${streak.count === 1 ? '' : 's'} in a row)`, 'backoff', { lock: elector.lock, backoffMs, streak: streak.count });
    }
    await elector.resign({ reason: 'hung', note: hungWhy, holdOffMs: backoffMs });
    return { kind: 'cut', reason: `hung: ${hungWhy}`, exitCode: outcome.exitCode ?? null };
  };
  const job = new CronJob(store, elector.lock, { schedule: schedule.expression, timezone: schedule.timezone, missed, elector }, runner);
  let fatal: InvalidConfigError | undefined;
  const offReports = reportStandby(elector, { onFatal: (err) => ((fatal = err), resolveStopped()) });
  elector.on('elected', (e) => info(`elected leader of "${elector.lock}" as ${elector.identity} (term ${e.term}); running "${schedule.expression}" (${schedule.timezone})`));
  elector.on('stopped', (e) => info(`stopped leading "${elector.lock}" (term ${e.term}, ${e.reason})`));
  job.on('storeError', (err) => warn(`cron: store error: ${err.message}`, 'store-error'));
  job.on('stale', (e) => info(`cron: the ledger already shows term ${e.newerTerm}; term ${e.term} is stale and claims nothing`));
  job.on('skipped', (e) => info(`cron: ${e.count} missed slot(s) skipped (through ${new Date(e.throughMs).toISOString()})`));
  job.on('claimed', (r) => info(`slot ${r.slot}: starting ${name} (term ${r.term}${r.late ? ', missed slot caught up late' : ''})`));
  job.on('finished', (r) => {
    const exit = r.outcome.exitCode !== undefined && r.outcome.exitCode !== null ? ` (exit ${r.outcome.exitCode})` : '';
    info(`slot ${r.slot}: ${r.status}${exit}${r.outcome.kind === 'cut' ? `: ${r.outcome.reason}` : r.outcome.error ? `: ${r.outcome.error}` : ''}`);
  });


  // Every signal goes to a running command; the first also stops the schedule.
  const onSignal = (sig: NodeJS.Signals) => {
    interrupted ??= sig;
    current?.signal(sig);
    resolveStopped();
  };
  const offSignals = onTerminationSignals(onSignal);
  try {
    job.start();
    await stopped;
    if (fatal) {
      await job.stop();
      throw fatal;
    }
    info(`${interrupted}: stopping; ${current ? `waiting for ${name} to exit` : 'no run in progress'}`);
    // The running command got the signal; let it end by itself so its real outcome is recorded.
    await job.stop({ abortRun: false });
    return 0;
  } finally {
    offReports();
    offSignals();
  }
}
