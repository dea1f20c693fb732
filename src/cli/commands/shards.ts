/**
 * `baton shards`: one process of COMMAND per shard this instance owns in a shard group (see
 * src/shards and docs/shards.md). Each child runs under the term runner exactly as `baton run`
 * runs one command: it gets BATON_SHARD, BATON_SHARDS, BATON_TERM, BATON_LOCK and
 * BATON_IDENTITY, and is stopped (SIGTERM, then SIGKILL, by the watchdog if baton dies) before
 * its shard could be taken by another instance. On a rebalance the child is stopped first and
 * the shard's lease released only once it has exited, so a shard never has two children.
 */
import { Command, Option } from 'commander';
import { InvalidConfigError, UsageError } from '../../core/errors.js';
import { ShardGroup, shardLock } from '../../shards/group.js';
import { CliExit, info, openCliStore, requireCommand, resolveIdentity, resolveTimingOptions, storeTarget, withOutputOptions, withStoreOption, withTimingOptions, type CommonOptions } from '../common.js';
import { examples } from '../help.js';
import { electorWindow } from '../leadership-window.js';
import { onTerminationSignals, signalExitCode } from '../signals.js';
import { runTerm, type TermRun } from '../term-runner.js';

interface ShardsOptions extends CommonOptions {
  group?: string;
  shards?: string;
  maxMoves?: string;
}

/** register adds `baton shards`. */
export function register(program: Command): void {
  const cmd = program
    .command('shards')
    .summary('run a command per shard this instance owns in a shard group')
    .description(
      'Join shard group G of N shards; the shards are spread evenly over the live instances, and ' +
        'for each shard this instance owns COMMAND runs with BATON_SHARD (0 … N-1), BATON_SHARDS, ' +
        'BATON_TERM (that shard\'s fencing token), BATON_LOCK and BATON_IDENTITY. When an instance ' +
        'joins, leaves or dies, as few shards as possible move, one hand-off at a time.',
    )
    .addHelpText(
      'after',
      examples([
        ['64 partitions consumed across the fleet, one process per owned shard', 'baton shards --group orders --shards 64 --identity "$POD_NAME" -- ./consume-partition.sh'],
        ['who owns which shard', 'baton status --group orders'],
      ]),
    )
    .argument('<command...>', 'the command to run per shard, after --')
    .addOption(new Option('--group <name>', 'the shard group (required)').env('BATON_GROUP'))
    .addOption(new Option('--shards <n>', 'how many shards the group has, 1–10000 (required)').env('BATON_SHARDS'))
    .addOption(new Option('--max-moves <n>', 'at most this many shards given up per retry period (default ⌈N/16⌉)'));
  withStoreOption(cmd);
  withTimingOptions(cmd);
  withOutputOptions(cmd);
  cmd.action(async (words: string[], opts: ShardsOptions) => {
    if (opts.group === undefined) throw new UsageError('shards: missing --group NAME (or BATON_GROUP)');
    if (opts.shards === undefined) throw new UsageError('shards: missing --shards N (or BATON_SHARDS)');
    const shards = wholeNumber(opts.shards, '--shards');
    const maxMovesPerPeriod = opts.maxMoves === undefined ? undefined : wholeNumber(opts.maxMoves, '--max-moves');
    const argv = requireCommand(words, 'shards', 'baton shards --group NAME --shards N -- ./work.sh');
    const timing = resolveTimingOptions(opts);
    const identity = resolveIdentity(opts);
    // Checked before the store is touched: ShardGroup validates the group name and count.
    const probe = { group: opts.group, shards, identity, maxMovesPerPeriod, ...timing };
    const store = await openCliStore(storeTarget(opts));
    try {
      throw new CliExit(await runShards(store, probe, argv));
    } finally {
      await store.close().catch(() => {});
    }
  });
}

function wholeNumber(text: string, flag: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n)) throw new InvalidConfigError(`${flag}: "${text}" is not a whole number`);
  return n;
}

async function runShards(
  store: Awaited<ReturnType<typeof openCliStore>>,
  options: { group: string; shards: number; identity: string; maxMovesPerPeriod?: number; leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number; jitterFactor: number },
  argv: string[],
): Promise<number> {
  const runs = new Map<number, TermRun>();
  const group = new ShardGroup({
    store,
    ...options,
    // A cooperative hand-off: the child first, the lease after it has exited.
    drain: async (shard) => {
      const run = runs.get(shard);
      if (!run) return;
      run.stop();
      await run.done;
    },
  });
  let stopping = false;
  let failure: Error | undefined;
  const start = (shard: number, term: number) => {
    const elector = group.electorOf(shard);
    if (!elector || stopping) return;
    info(`shard ${shard}: owned (term ${term}); starting ${argv[0]}`);
    const run = runTerm(electorWindow(elector, term), {
      argv,
      lock: shardLock(options.group, shard),
      identity: options.identity,
      env: { BATON_SHARD: String(shard), BATON_SHARDS: String(options.shards), BATON_GROUP: options.group },
      onLost: (reason) => info(`shard ${shard}: lost (${reason}); stopping ${argv[0]}`),
    });
    runs.set(shard, run);
    void run.done.then((outcome) => {
      if (runs.get(shard) === run) runs.delete(shard);
      if (outcome.kind === 'exited' && !stopping && elector.isLeader() && elector.term === term) {
        // The command ended while the shard is still ours: run it again after a retry period.
        info(`shard ${shard}: ${argv[0]} exited with ${outcome.code}; restarting it in ${options.retryPeriodMs} ms`);
        setTimeout(() => {
          if (!stopping && elector.isLeader() && elector.term === term && !runs.has(shard)) start(shard, term);
        }, options.retryPeriodMs).unref();
      } else if (outcome.kind === 'not-started') {
        failure ??= new InvalidConfigError(`shards: cannot run ${argv[0]}: ${outcome.message}`);
        done();
      }
    });
  };
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  let signalled: NodeJS.Signals | undefined;
  const offSignals = onTerminationSignals((sig) => {
    signalled ??= sig;
    done();
  });
  group.on('acquired', ({ shard, term }) => start(shard, term));
  group.on('released', ({ shard, reason }) => info(`shard ${shard}: given up (${reason})`));
  group.on('storeError', (err) => {
    if (err instanceof InvalidConfigError) {
      failure ??= err;
      done();
    } else info(`store error: ${err.message}`);
  });
  group.start();
  info(`joined shard group "${options.group}" (${options.shards} shards) as ${options.identity}`);
  try {
    await finished;
  } finally {
    stopping = true;
    offSignals();
    // Every child stopped, then every lease released: the other instances take the shards at once.
    await group.stop();
    await Promise.all([...runs.values()].map((r) => (r.stop(), r.done)));
  }
  if (failure) throw failure;
  return signalled ? signalExitCode(signalled) : 0;
}
