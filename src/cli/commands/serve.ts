import { readFileSync, statSync } from 'node:fs';
import { Command, Option } from 'commander';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { InvalidConfigError, errorMessage } from '../../core/errors.js';
import type { LeaderElector } from '../../core/elector.js';
import { validateLockName } from '../../core/options.js';
import { createLeaderServer } from '../../server/server.js';
import { createLogger, logElectorEvents, type LogFormat, type Logger } from '../../server/log.js';
import {
  CliExit,
  makeElector,
  openCliStore,
  requireLock,
  resolveIdentity,
  resolveTimingOptions,
  storeLabel,
  storeTarget,
  withLockOption,
  withStoreOption,
  withTimingOptions,
  type CommonOptions,
} from '../common.js';
import { examples } from '../help.js';
import { parseListen } from '../listen.js';
import { electorWindow } from '../leadership-window.js';
import { onTerminationSignals } from '../signals.js';
import { TermExits, runTerm } from '../term-runner.js';
import { resolveWorkHealth } from '../work-health.js';
import { answerSystemdWatchdog } from '../sd-watchdog.js';
import { checkCandidateStore, resolveCandidate, withCandidateOptions, type CandidateFlags } from '../candidate-flags.js';

interface ServeOptions extends CommonOptions, CandidateFlags {
  progressTimeout?: string;
  listen: string;
  stepDownTokenFile?: string;
  logFormat: string;
}

/** register adds `baton serve`: campaign, and answer who leads over HTTP. */
export function register(program: Command): void {
  const cmd = program
    .command('serve')
    .summary('campaign for a lock and serve /leader, /healthz, /metrics and a live dashboard')
    .description(
      'Campaign for the lock like `baton run` and serve HTTP for co-located apps and operators: ' +
        'GET /leader (JSON, from memory), /healthz, /readyz, /metrics (Prometheus), / (dashboard), ' +
        'GET /candidates (the lock\'s candidate registry and who would be preferred), and POST /step-down and ' +
        'POST /handover?to=ID (only with a token). With --progress-timeout, the app beside it reports ' +
        'progress with POST /heartbeat (same token); none for that long and the leader steps down ' +
        '(reason hung), releases, and backs off (docs/watchdog.md). With `-- COMMAND`, the command runs while this ' +
        'instance leads (stopped before anyone else could lead); without one, baton just holds the ' +
        'lease. SIGTERM/SIGINT stop the command, release the lease, close the server and exit 0.',
    )
    .argument('[command...]', 'optional command to run while leading, after --');
  withStoreOption(cmd);
  withLockOption(cmd);
  withTimingOptions(cmd);
  cmd
    .addOption(new Option('--listen <addr>', 'address to serve on: HOST:PORT, :PORT or [IPv6]:PORT (port 0 picks one)').default('127.0.0.1:4040').env('BATON_LISTEN'))
    .addOption(new Option('--step-down-token-file <file>', 'enable POST /step-down, /handover and /heartbeat for this bearer token (or env BATON_STEP_DOWN_TOKEN)'))
    .addOption(new Option('--log-format <format>', 'log lines on stderr: human or json').choices(['human', 'json']).default('human').env('BATON_LOG_FORMAT'))
    .addOption(new Option('--progress-timeout <d>', 'step down when the app sends no POST /heartbeat for this long (needs the token)'))
    .addOption(new Option('--shard-group <name...>', 'also show these shard groups at GET /shards and on the dashboard'));
  withCandidateOptions(cmd);
  cmd
    .addHelpText(
      'after',
      examples([
        ['a sidecar that answers GET /leader for the app beside it', 'baton serve --lock orders-consumer --listen 127.0.0.1:4040'],
        ['lead only while the app keeps posting heartbeats (at least every 30s)', 'BATON_STEP_DOWN_TOKEN=$(cat /etc/baton/token) baton serve --lock orders-consumer --progress-timeout 30s'],
        ['a registered candidate: listed at GET /candidates, can be named by POST /handover?to=ID', 'baton serve --store redis://cache:6379 --lock orders-consumer --app-version 2.4.1 --label zone=eu-west-1a'],
        ['run the consumer while leading, with JSON logs, on a shared store', 'baton serve --store redis://cache:6379 --lock orders-consumer --log-format json -- node consumer.js'],
      ]),
    )
    .action(async (words: string[], opts: ServeOptions & { shardGroup?: string[] }) => {
      const lock = requireLock(opts);
      const shardGroups = (opts.shardGroup ?? []).map((g) => validateLockName(g, '--shard-group'));
      const { host, port } = parseListen(opts.listen);
      const log = createLogger(opts.logFormat as LogFormat);
      const token = readStepDownToken(opts.stepDownTokenFile, log);
      const argv = words.length > 0 ? words : undefined;
      const timing = resolveTimingOptions(opts);
      const progressTimeoutMs = resolveWorkHealth({ progressTimeout: opts.progressTimeout }).progressTimeoutMs;
      if (progressTimeoutMs !== undefined && token === undefined) {
        throw new InvalidConfigError('--progress-timeout needs a token: POST /heartbeat takes the same one as /step-down (--step-down-token-file FILE or BATON_STEP_DOWN_TOKEN)');
      }
      const candidate = resolveCandidate(opts);
      resolveIdentity(opts);
      const store = await openCliStore(storeTarget(opts));
      const note = checkCandidateStore(store, candidate);
      if (note) log('warn', 'no-registry', note, {});
      const exits = new TermExits();
      const elector = makeElector(store, opts, lock, timing, { progressTimeoutMs, beforeRelease: exits.beforeRelease, candidate });
      const registry = new Registry();
      collectDefaultMetrics({ register: registry });
      const label = storeLabel(opts);
      const server = createLeaderServer(elector, { storeLabel: label, stepDownToken: token, registry, log, shardGroups });
      let stopLogging = () => {};
      const stopAnswering = answerSystemdWatchdog((why) => log('warn', 'no-systemd-watchdog', why, {}));
      try {
        const at = await server.listen(port, host).catch((err: NodeJS.ErrnoException) => {
          throw new InvalidConfigError(`serve: cannot listen on ${opts.listen}: ${err.code ?? errorMessage(err)}`);
        });
        log('info', 'listening', `serving "${lock}" on ${at.url} (store ${label}; step-down ${token ? 'enabled' : 'disabled'})`, {
          lock,
          identity: elector.identity,
          url: at.url,
          store: label,
          stepDown: !!token,
        });
        stopLogging = logElectorEvents(elector, log);
        elector.start();
        throw new CliExit(await serveUntilSignal(elector, log, argv, exits));
      } finally {
        await elector.stop().catch(() => {});
        stopAnswering();
        stopLogging();
        await server.close().catch(() => {});
        await store.close().catch(() => {});
      }
    });
}

/**
 * serveUntilSignal runs the optional command whenever this instance leads, until SIGTERM,
 * SIGINT or SIGHUP; then it stops the command and returns 0 (127 if the command cannot start).
 */
async function serveUntilSignal(elector: LeaderElector, log: Logger, argv: string[] | undefined, exits: TermExits): Promise<number> {
  const shutdown = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    if (shutdown.signal.aborted) return;
    log('info', 'shutdown', `received ${sig}: ${argv ? `stopping ${argv[0]}, ` : ''}releasing "${elector.lock}" and closing the server`, { signal: sig });
    shutdown.abort();
  };
  const offSignals = onTerminationSignals(onSignal);
  const stopped = new Promise<void>((resolve) => shutdown.signal.addEventListener('abort', () => resolve(), { once: true }));
  try {
    if (!argv) {
      await stopped;
      return 0;
    }
    while (!shutdown.signal.aborted) {
      const won = await elector.elected({ signal: shutdown.signal }).catch(() => undefined);
      if (!won) break;
      const code = await runWhileLeading(elector, log, argv, won.term, stopped, exits);
      if (code !== undefined) return code;
    }
    return 0;
  } finally {
    offSignals();
  }
}

/**
 * runWhileLeading runs the command for one term (cli/term-runner.ts), which stops it before any
 * other instance could lead. Returns an exit code to end serve with, or undefined to campaign
 * again.
 */
async function runWhileLeading(elector: LeaderElector, log: Logger, argv: string[], term: number, stopped: Promise<void>, exits: TermExits): Promise<number | undefined> {
  log('info', 'command-start', `starting ${argv[0]} (term ${term})`, { lock: elector.lock, term, command: argv[0] });
  const run = runTerm(electorWindow(elector, term), {
    argv,
    lock: elector.lock,
    identity: elector.identity,
    onLost: (reason) => log('warn', 'command-stop', `leadership lost (${reason}); stopping ${argv[0]}`, { lock: elector.lock, term, reason }),
  });
  exits.track(term, run);
  const outcome = await Promise.race([run.done, stopped.then(() => undefined)]);
  if (outcome === undefined) {
    // Shutdown: SIGTERM now; SIGKILL no later than the last renewal allows.
    run.stop();
    await run.done;
    log('info', 'command-stopped', `${argv[0]} stopped for shutdown`, { command: argv[0] });
    return undefined;
  }
  if (outcome.kind === 'lost') {
    const x = outcome.exit;
    log('info', 'command-stopped', `${argv[0]} stopped (${x.code !== null ? `exit ${x.code}` : x.signal})`, { command: argv[0], code: x.code, signal: x.signal });
    return undefined;
  }
  if (outcome.kind === 'not-started') {
    log('error', 'command-error', `cannot run ${argv[0]}: ${outcome.message}`, { command: argv[0] });
    return outcome.code;
  }
  const x = outcome.exit;
  log('warn', 'command-exit', `${argv[0]} exited with ${outcome.code}; handing "${elector.lock}" over and campaigning again`, { command: argv[0], code: x.code, signal: x.signal });
  await elector.resign();
  return undefined;
}

/** readStepDownToken reads --step-down-token-file, else BATON_STEP_DOWN_TOKEN; undefined disables /step-down. */
function readStepDownToken(file: string | undefined, log: Logger): string | undefined {
  let token: string | undefined;
  let source: string;
  if (file !== undefined) {
    source = `--step-down-token-file ${file}`;
    try {
      if (statSync(file).mode & 0o077) log('warn', 'token-file-mode', `${file} is readable by other users; chmod 600 it`, { file });
      token = readFileSync(file, 'utf8').trim();
    } catch (err) {
      throw new InvalidConfigError(`${source}: cannot read it (${(err as NodeJS.ErrnoException).code ?? errorMessage(err)})`);
    }
  } else {
    source = 'BATON_STEP_DOWN_TOKEN';
    token = process.env.BATON_STEP_DOWN_TOKEN;
    if (token === undefined) return undefined;
    token = token.trim();
  }
  if (token.length < 8 || /\s/.test(token)) throw new InvalidConfigError(`${source}: the token must be at least 8 characters without spaces`);
  return token;
}
