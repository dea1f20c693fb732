/**
 * `baton shards`: one process of COMMAND per shard this instance owns in a shard group (see
 * src/shards and docs/shards.md). Each child runs under the term runner exactly as `baton run`
 * runs one command: it gets BATON_SHARD, BATON_SHARDS, BATON_TERM, BATON_LOCK and
 * BATON_IDENTITY, and is stopped (SIGTERM, then SIGKILL, by the watchdog if baton dies) before
 * its shard could be taken by another instance. On a rebalance the child is stopped first and
 * the shard's lease released only once it has exited, so a shard never has two children.
 *
 * With `--progress-timeout` / `--health-cmd` (issue 28, docs/watchdog.md) each shard's child has
 * its own watchdog environment (work-health.ts: its own NOTIFY_SOCKET, WATCHDOG_USEC/PID and
 * BATON_HEARTBEAT_FILE) and is watched on its own. A hung child is stopped as on a step-down,
 * then the shard is given up and excluded from this member for a back-off (ShardGroup's
 * giveUpHung): another member takes it at once, and it is not handed straight back.
 *
 * With `--listen ADDR` the member serves `GET /metrics` (per shard: owned or not, step-downs by
 * reason, the last one's reason and note, the exclusion left; metrics/shard-group.ts) and
 * `GET /healthz` (server/shards-server.ts).
 */
import { Command, Option } from 'commander';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { InvalidConfigError, UsageError, errorMessage } from '../../core/errors.js';
import { ShardGroup, shardLock } from '../../shards/group.js';
import { CliExit, info, openCliStore, requireCommand, resolveIdentity, resolveTimingOptions, storeTarget, warn, withOutputOptions, withStoreOption, withTimingOptions, type CommonOptions } from '../common.js';
import { examples } from '../help.js';
import { electorWindow } from '../leadership-window.js';
import { onTerminationSignals, signalExitCode } from '../signals.js';
import { batonEnv, runTerm, type TermRun } from '../term-runner.js';
import { WorkHealth, hangBaseMs, resolveWorkHealth, withWorkHealthOptions, type WorkHealthFlags, type WorkHealthSettings } from '../work-health.js';
import { formatDuration } from '../../core/duration.js';
import { parseListen } from '../listen.js';
import { createShardMemberServer } from '../../server/shards-server.js';

interface ShardsOptions extends CommonOptions, WorkHealthFlags {
  group?: string;
  shards?: string;
  maxMoves?: string;
  listen?: string;
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
        ['each child must send WATCHDOG=1 (or touch $BATON_HEARTBEAT_FILE) every 30s, or its shard moves', 'baton shards --group orders --shards 64 --progress-timeout 30s -- ./consume-partition.sh'],
        ['serve /metrics and /healthz on port 9464 (per shard: owned, step-downs and why)', 'baton shards --group orders --shards 64 --listen 127.0.0.1:9464 --health-cmd ./check-partition.sh -- ./consume-partition.sh'],
        ['who owns which shard, and why a shard\'s last owner gave it up', 'baton status --group orders'],
      ]),
    )
    .argument('<command...>', 'the command to run per shard, after --')
    .addOption(new Option('--group <name>', 'the shard group (required)').env('BATON_GROUP'))
    .addOption(new Option('--shards <n>', 'how many shards the group has, 1–10000 (required)').env('BATON_SHARDS'))
    .addOption(new Option('--max-moves <n>', 'at most this many shards given up per retry period (default ⌈N/16⌉)'))
    .addOption(new Option('--listen <addr>', 'serve GET /metrics and /healthz on this address: HOST:PORT, :PORT or [IPv6]:PORT (port 0 picks one); off by default'));
  withStoreOption(cmd);
  withTimingOptions(cmd);
  withWorkHealthOptions(cmd);
  withOutputOptions(cmd);
  cmd.action(async (words: string[], opts: ShardsOptions) => {
    if (opts.group === undefined) throw new UsageError('shards: missing --group NAME (or BATON_GROUP)');
    if (opts.shards === undefined) throw new UsageError('shards: missing --shards N (or BATON_SHARDS)');
    const shards = wholeNumber(opts.shards, '--shards');
    const maxMovesPerPeriod = opts.maxMoves === undefined ? undefined : wholeNumber(opts.maxMoves, '--max-moves');
    const argv = requireCommand(words, 'shards', 'baton shards --group NAME --shards N -- ./work.sh');
    const listen = opts.listen === undefined ? undefined : { text: opts.listen, ...parseListen(opts.listen) };
    const timing = resolveTimingOptions(opts);
    const health = resolveWorkHealth(opts);
    const identity = resolveIdentity(opts);
    // Checked before the store is touched: ShardGroup validates the group name and count.
    const probe = { group: opts.group, shards, identity, maxMovesPerPeriod, ...timing };
    const store = await openCliStore(storeTarget(opts));
    try {
      throw new CliExit(await runShards(store, probe, argv, health, listen));
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
  healthSettings: WorkHealthSettings,
  listen: { text: string; host: string; port: number } | undefined,
): Promise<number> {
  const runs = new Map<number, TermRun>();
  const watching = healthSettings.progressTimeoutMs !== undefined || healthSettings.health !== undefined;
  // Each shard's child has its own watchdog environment (socket, heartbeat file): one WorkHealth
  // per shard, opened when its child first starts and closed when it is given up.
  const healths = new Map<number, Promise<WorkHealth>>();
  let warnedNoSocket = false;
  const healthOf = (shard: number) => {
    let h = healths.get(shard);
    if (!h) {
      h = WorkHealth.open(healthSettings, (path) => {
        if (warnedNoSocket) return;
        warnedNoSocket = true;
        warn(`no NOTIFY_SOCKET: python3 could not be run or could not bind ${path}; the children get BATON_HEARTBEAT_FILE only (docs/watchdog.md)`, 'no-notify-socket');
      });
      healths.set(shard, h);
    }
    return h;
  };
  const closeHealth = (shard: number) => {
    const h = healths.get(shard);
    healths.delete(shard);
    void h?.then((x) => x.close());
  };
  // A hung child is stopped like one whose shard was lost: SIGTERM, then SIGKILL after half the
  // gap between the renew deadline and the lease (as `baton run`).
  const hungGraceMs = (options.leaseDurationMs - options.renewDeadlineMs) / 2;
  const group = new ShardGroup({
    store,
    ...options,
    hangBackoffBaseMs: hangBaseMs(healthSettings),
    // A cooperative hand-off: the child first, the lease after it has exited.
    drain: async (shard) => {
      const run = runs.get(shard);
      if (!run) return;
      run.stop();
      await run.done;
    },
  });
  // The listener is up before the member joins, so no step-down goes uncounted.
  let server: ReturnType<typeof createShardMemberServer> | undefined;
  if (listen) {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    server = createShardMemberServer(group, { registry });
    const at = await server.listen(listen.port, listen.host).catch(async (err: NodeJS.ErrnoException) => {
      await server?.close();
      throw new InvalidConfigError(`shards: cannot listen on ${listen.text}: ${err.code ?? errorMessage(err)}`);
    });
    info(`serving /metrics and /healthz on ${at.url}`, 'listening', { url: at.url });
  }
  let stopping = false;
  let failure: Error | undefined;
  const start = async (shard: number, term: number) => {
    const elector = group.electorOf(shard);
    if (!elector || stopping) return;
    const health = watching ? await healthOf(shard) : undefined;
    // Still ours after the socket was opened?
    if (stopping || group.electorOf(shard) !== elector || !elector.isLeader() || elector.term !== term || runs.has(shard)) return;
    info(`shard ${shard}: owned (term ${term}); starting ${argv[0]}`);
    const window = electorWindow(elector, term);
    const command = {
      argv,
      lock: shardLock(options.group, shard),
      identity: options.identity,
      env: { BATON_SHARD: String(shard), BATON_SHARDS: String(options.shards), BATON_GROUP: options.group, ...health?.env() },
      onLost: (reason: string) => info(`shard ${shard}: lost (${reason}); stopping ${argv[0]}`),
    };
    const run = runTerm(window, command);
    runs.set(shard, run);
    let hungWhy: string | undefined;
    const watch = health?.watch(batonEnv(window, command), (why) => {
      hungWhy = why;
      warn(`shard ${shard} of "${options.group}" (term ${term}) is hung: ${why}; stopping ${argv[0]} and giving the shard up`, 'hung', { group: options.group, shard, term, why });
      run.stop(hungGraceMs);
    });
    void run.done.then(async (outcome) => {
      watch?.close();
      if (runs.get(shard) === run) runs.delete(shard);
      if (hungWhy !== undefined) {
        // The child is dead: give the shard up, excluded from this member for the back-off.
        closeHealth(shard);
        if (stopping) return;
        const given = await group.giveUpHung(shard, hungWhy).catch((err: Error) => void warn(`shard ${shard}: ${err.message}`));
        if (given) {
          info(`shard ${shard}: released (hung); not taken again here for ${formatDuration(given.backoffMs)} (hung ${given.streak} time${given.streak === 1 ? '' : 's'} in a row)`, 'backoff', { group: options.group, shard, backoffMs: given.backoffMs, streak: given.streak });
        }
        return;
      }
      if (outcome.kind === 'exited' && !stopping && elector.isLeader() && elector.term === term) {
        // The command ended while the shard is still ours: run it again after a retry period.
        info(`shard ${shard}: ${argv[0]} exited with ${outcome.code}; restarting it in ${options.retryPeriodMs} ms`);
        setTimeout(() => {
          if (!stopping && elector.isLeader() && elector.term === term && !runs.has(shard)) void start(shard, term);
        }, options.retryPeriodMs).unref();
        return;
      }
      closeHealth(shard);
      if (outcome.kind === 'not-started') {
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
  group.on('acquired', ({ shard, term }) => void start(shard, term));
  group.on('released', ({ shard, reason }) => {
    info(`shard ${shard}: given up (${reason})`);
    // No child left for it (a running one closes its shard's watchdog when it exits).
    if (!runs.has(shard)) closeHealth(shard);
  });
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
    await Promise.all([...healths.values()].map((h) => h.then((x) => x.close())));
    await server?.close();
  }
  if (failure) throw failure;
  return signalled ? signalExitCode(signalled) : 0;
}
