/**
 * `baton aws …`: Auto Scaling helpers — hand-over before termination (drain,
 * watch-termination) and a one-shot run of the leader-tag reconciler — plus the AWS strategies
 * of `baton is-leader` (awsIsLeader). Nothing here loads the AWS SDK until a command runs
 * (src/aws imports it lazily), so `baton --help` and the store commands never pay for it.
 */
import { Command, Option } from 'commander';
import { InvalidConfigError, UsageError } from '../../core/errors.js';
import { ExitCode, exitCodeFor } from '../exit-codes.js';
import { parseDuration } from '../../core/duration.js';
import { validateIdentity, validateLockName } from '../../core/options.js';
import { CliExit, info, openCliStore, withOutputOptions, withStoreOption, type CommonOptions } from '../common.js';
import { examples } from '../help.js';
import { defaultStoreUrl, parseStoreUrl } from '../../stores/registry.js';
import type { LeaseStore } from '../../core/store.js';
import { checkLeaderTag, checkLowest, connectAws, drainInstance, InstanceMetadata, leaderTagKey, reconcileGroup, resolveRegion, waitForTermination, type DrainResult } from '../../aws/index.js';

/** AWS_STRATEGIES are the `is-leader --strategy` values served here. */
export const AWS_STRATEGIES = ['asg-lowest', 'asg-tag'] as const;

/**
 * awsIsLeader runs an AWS strategy of `baton is-leader` and returns the exit code: 0 leader,
 * 1 not; errors propagate (69 AWS unreachable, 78 not in a group / refused / SDK missing) —
 * the same for both strategies, so a script tells "not set up" from "not the leader".
 */
export async function awsIsLeader(strategy: string, opts: { json?: boolean; tag?: string }): Promise<number> {
  quietSdk();
  const result = strategy === 'asg-lowest' ? await checkLowest() : await checkLeaderTag({ tag: opts.tag });
  if (opts.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  return result.isLeader ? ExitCode.ok : ExitCode.no;
}

interface DrainCliOptions extends Omit<CommonOptions, 'lock'> {
  lock?: string[];
  hook?: string;
  group?: string;
  timeout: string;
  interval?: string;
  json?: boolean;
}

/** register adds `baton aws` and its subcommands. */
export function register(program: Command): Command {
  const aws = program
    .command('aws')
    .summary('EC2 Auto Scaling: hand over before termination, reconcile the leader tag')
    .description(
      'Helpers for EC2 Auto Scaling groups (see docs/aws.md). The leader checks themselves are ' +
        '`baton is-leader --strategy asg-lowest|asg-tag`. Needs @aws-sdk/client-auto-scaling (and ' +
        '@aws-sdk/client-ec2 for tags).',
    )
    .addHelpText(
      'after',
      examples([
        ['is this instance the leader of its group? (no store needed)', 'baton is-leader --strategy asg-lowest'],
        ['hand over before Auto Scaling terminates the instance', 'baton aws watch-termination --lock nightly-report --hook baton-drain'],
      ]),
    );

  const drain = aws
    .command('drain')
    .summary('step down and release local leases, then complete the termination lifecycle action')
    .description(
      'Ask every holder on this host of the --lock leases to step down, wait until each has ' +
        'released, then complete the lifecycle action --hook (CONTINUE) for this instance. Run it ' +
        'while a termination hook holds the instance in Terminating:Wait. The action is completed ' +
        'even if a holder does not release in time (the instance goes away regardless). ' +
        'Exit 0 done, 75 a holder did not release within --timeout, 69 store or AWS unreachable, ' +
        '78 AWS refused (e.g. no lifecycle action is pending for this instance).',
    );
  withDrainOptions(drain).addHelpText('after', examples([['hand over this host\'s leases, then let the instance terminate', 'baton aws drain --lock nightly-report --hook baton-drain']]));
  drain.action(async (opts: DrainCliOptions) => {
    throw new CliExit(await runDrain(opts));
  });

  const watch = aws
    .command('watch-termination')
    .summary('wait until Auto Scaling terminates this instance, then drain')
    .description(
      'Poll instance metadata autoscaling/target-lifecycle-state every --interval; when it turns ' +
        'Terminated (or Warmed:*), run `baton aws drain` with the same options and exit with its ' +
        'code. Run it as a service on every instance of the group.',
    );
  withOutputOptions(withDrainOptions(watch))
    .option('--interval <d>', 'how often to poll instance metadata', '5s')
    .addHelpText('after', examples([['run as a service on every instance of the group', 'baton aws watch-termination --lock nightly-report --hook baton-drain']]))
    .action(async (opts: DrainCliOptions) => {
      quietSdk();
      const intervalMs = parseDuration(opts.interval ?? '5s', '--interval');
      checkDrainOptions(opts);
      const abort = new AbortController();
      const stop = (sig: NodeJS.Signals) => abort.abort(new CliExit(sig === 'SIGINT' ? 130 : 143));
      process.once('SIGTERM', stop).once('SIGINT', stop);
      try {
        const state = await waitForTermination({ imds: new InstanceMetadata(), intervalMs, signal: abort.signal, log: info });
        info(`target lifecycle state is ${state}; handing over`);
      } finally {
        process.off('SIGTERM', stop).off('SIGINT', stop);
      }
      throw new CliExit(await runDrain(opts));
    });

  aws
    .command('reconcile')
    .summary('run the leader-tag reconciler once for the named groups')
    .description(
      'Make exactly one InService, Healthy member of each --group carry the leader tag (what the ' +
        'Lambda handler does on each notification). A stale tag left on an instance that is not ' +
        'InService (e.g. EC2 refuses to untag a terminated one) does not count and is reported as a ' +
        'warning. Exit 0 when every group settled (also with no InService member), 75 if one did ' +
        'not (run again), 69 AWS unreachable, 78 a group does not exist or AWS refused. ' +
        'Region: AWS_REGION or instance metadata.',
    )
    .addHelpText('after', examples([['settle the leader tag of two groups', 'baton aws reconcile --group web --group workers']]))
    .addOption(new Option('--group <name>', 'Auto Scaling group (repeatable)').argParser(collect).makeOptionMandatory())
    .addOption(new Option('--tag <key>', 'leader tag key (default app:isLeader)').env('BATON_LEADER_TAG'))
    .option('--json', 'print the result of each group as JSON')
    .action(async (opts: { group: string[]; tag?: string; json?: boolean }) => {
      quietSdk();
      const tag = leaderTagKey(opts.tag);
      const region = await resolveRegion(new InstanceMetadata());
      const api = connectAws({ region });
      const missing: string[] = [];
      try {
        for (const group of opts.group) {
          const r = await reconcileGroup(api, group, { tag, log: info });
          if (opts.json) process.stdout.write(`${JSON.stringify(r)}\n`);
          if (!r.exists) missing.push(group);
          else if (!opts.json) info(`${group}: leader ${r.leader ?? 'none'} (${r.candidates} candidate(s))${r.stale.length ? `; ${r.stale.length} stale tag(s) left` : ''}`);
        }
      } finally {
        api.close();
      }
      // A misspelt name must not pass for a group with nobody in service (that one is exit 0).
      if (missing.length > 0) throw new InvalidConfigError(`aws reconcile: no Auto Scaling group named ${missing.map((g) => `"${g}"`).join(', ')} in ${region}`);
      throw new CliExit(ExitCode.ok);
    });
  return aws;
}

function withDrainOptions(cmd: Command): Command {
  withStoreOption(cmd);
  return cmd
    .addOption(new Option('--lock <name>', 'lock to hand over if held on this host (repeatable)').env('BATON_LOCK').argParser(collect))
    .addOption(new Option('--hook <name>', 'termination lifecycle hook to complete').env('BATON_LIFECYCLE_HOOK'))
    .option('--group <name>', 'this instance\'s Auto Scaling group (default: looked up)')
    .option('--identity <id>', 'only hand over leases held by this identity (default: any holder on this host)')
    .option('--timeout <d>', 'how long to wait for each holder to release', '30s')
    .option('--json', 'print the outcome as JSON');
}

function checkDrainOptions(opts: DrainCliOptions): void {
  if ((opts.lock ?? []).length === 0 && !opts.hook) throw new UsageError('aws drain: give --lock NAME (repeatable), --hook NAME, or both');
  for (const l of opts.lock ?? []) validateLockName(l, '--lock');
  if (opts.identity !== undefined) validateIdentity(opts.identity);
  parseDuration(opts.timeout, '--timeout');
  // Check the store URL now: watch-termination may only need it hours later.
  if ((opts.lock ?? []).length > 0) parseStoreUrl(opts.store ?? defaultStoreUrl());
}

async function runDrain(opts: DrainCliOptions): Promise<number> {
  quietSdk();
  checkDrainOptions(opts);
  const locks = opts.lock ?? [];
  // Opened inside the drain: a store that is down fails the hand-over, not the lifecycle action.
  let store: Promise<LeaseStore> | undefined;
  try {
    const result = await drainInstance({
      store: () => (store ??= openCliStore({ store: opts.store })),
      locks,
      identity: opts.identity,
      timeoutMs: parseDuration(opts.timeout, '--timeout'),
      hook: opts.hook,
      group: opts.group,
      log: info,
    });
    const exitCode = drainExitCode(result);
    if (opts.json) process.stdout.write(`${JSON.stringify({ locks: result.locks, lifecycle: result.lifecycle, lifecycleError: result.lifecycleError, exitCode })}\n`);
    for (const l of result.locks) if (l.outcome === 'not-held-here') info(`"${l.lock}" is not held on this host; nothing to hand over`);
    if (result.lifecycleError) info(result.lifecycleError);
    return exitCode;
  } finally {
    await store?.then((s) => s.close(), () => {});
  }
}

/**
 * drainExitCode is what a drain adds up to: a lifecycle failure says most (its own code); then
 * a failed hand-over (69 unreachable, 78 refused or misconfigured; an unexpected error counts as
 * unreachable), then a holder that did not release in time (75); else 0.
 */
export function drainExitCode(r: DrainResult): number {
  if (r.lifecycleError !== undefined) return exitCodeFor(r.lifecycleCause);
  const failed = r.handOverErrors.map((err) => {
    const code = exitCodeFor(err);
    return code !== ExitCode.software ? code : ExitCode.unavailable;
  });
  if (failed.length > 0) return Math.max(...failed);
  return r.locks.some((l) => l.outcome === 'timeout') ? ExitCode.tempFail : ExitCode.ok;
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

// The SDK prints a multi-line notice about future Node versions on every run; a CLI whose
// stderr is one line per event keeps it quiet unless the user asked for it.
function quietSdk(): void {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
}
