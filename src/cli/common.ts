/**
 * Shared CLI plumbing: the common options, their validation, and how errors become one line
 * on stderr plus a sysexits-style exit code.
 */
import { Command, Option } from 'commander';
import { LeaderElector, type LeaderElectorOptions } from '../core/elector.js';
import { InvalidConfigError, UsageError, errorMessage } from '../core/errors.js';
import { CliExit, exitCodeFor } from './exit-codes.js';
import { parseDuration } from '../core/duration.js';
import { MAX_DURATION_MS, resolveTiming, validateIdentity, validateLockName, type Timing } from '../core/options.js';
import { defaultIdentity } from '../core/identity.js';
import { existsSync } from 'node:fs';
import { BatonError } from '../core/errors.js';
import { defaultStoreUrl, parseStoreUrl, redactUrl } from '../stores/registry.js';
import type { LeaseStore } from '../core/store.js';
import { outputSettings, printable, say } from './output.js';
import { exportTelemetry } from './telemetry.js';

/** Options every lease-using command accepts. */
export interface CommonOptions {
  store?: string;
  lock?: string;
  identity?: string;
  leaseDuration?: string;
  renewDeadline?: string;
  retryPeriod?: string;
  debug?: boolean;
}

/** withStoreOption adds --store (env BATON_STORE). */
export function withStoreOption(cmd: Command): Command {
  return cmd.addOption(new Option('--store <url>', 'store URL (default: embedded SQLite under $XDG_STATE_HOME/baton)').env('BATON_STORE'));
}

/** withLockOption adds --lock (env BATON_LOCK). */
export function withLockOption(cmd: Command, required = true): Command {
  return cmd.addOption(new Option('--lock <name>', required ? 'lock name (required)' : 'lock name').env('BATON_LOCK'));
}

/** withTimingOptions adds --identity and the three durations. */
export function withTimingOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--identity <id>', 'this candidate\'s identity (default: <hostname>-<pid>-<random>)').env('BATON_IDENTITY'))
    .addOption(new Option('--lease-duration <d>', 'lease duration, e.g. 15s').env('BATON_LEASE_DURATION'))
    .addOption(new Option('--renew-deadline <d>', 'leader steps down if not renewed within this, e.g. 10s').env('BATON_RENEW_DEADLINE'))
    .addOption(new Option('--retry-period <d>', 'renew / retry interval, e.g. 2s').env('BATON_RETRY_PERIOD'));
}

/** requireLock returns the validated --lock value or throws a usage error. */
export function requireLock(opts: CommonOptions): string {
  if (opts.lock === undefined) throw new UsageError('missing --lock NAME (or BATON_LOCK)');
  return validateLockName(opts.lock, '--lock');
}

/**
 * CLI_MINIMUM_MS: the shortest timings the command line accepts, and why. A command under
 * baton must be signalled and reaped, and the store answer, within these; below them a
 * machine under load cannot keep the promise that a command stops before another can lead.
 */
export const CLI_MINIMUM_MS = {
  leaseDurationMs: { ms: 100, why: 'a lease must outlast a store round trip plus the time to stop a command' },
  renewDeadlineMs: { ms: 50, why: 'a renewal must fit in it, store round trip included' },
  retryPeriodMs: { ms: 10, why: 'timers and store round trips take milliseconds; a shorter period only loads the store' },
} as const;

const FLAG_OF = { leaseDurationMs: '--lease-duration', renewDeadlineMs: '--renew-deadline', retryPeriodMs: '--retry-period' } as const;
const TEXT_OF = { leaseDurationMs: 'leaseDuration', renewDeadlineMs: 'renewDeadline', retryPeriodMs: 'retryPeriod' } as const;

/**
 * resolveTimingOptions parses the duration flags and validates them together. Messages name the
 * flags and echo the values as typed (`0.1ms`, not the `0` it rounds to).
 */
export function resolveTimingOptions(opts: CommonOptions, defaults: Partial<Timing> = {}): Timing {
  const partial: Partial<Timing> = { ...defaults };
  const typed: Partial<Record<keyof typeof FLAG_OF, string>> = {};
  for (const key of Object.keys(FLAG_OF) as (keyof typeof FLAG_OF)[]) {
    const text = opts[TEXT_OF[key]];
    if (text === undefined) continue;
    const value = parseDuration(text, FLAG_OF[key]);
    const min = CLI_MINIMUM_MS[key];
    if (value < min.ms) throw new InvalidConfigError(`${FLAG_OF[key]}: "${text}" is below the minimum of ${min.ms}ms (${min.why})`);
    if (value > MAX_DURATION_MS) throw new InvalidConfigError(`${FLAG_OF[key]}: "${text}" is longer than the 24h limit`);
    partial[key] = value;
    typed[key] = text.trim();
  }
  try {
    return resolveTiming(partial);
  } catch (err) {
    // The library names options as the API spells them; on the command line, name the flags.
    if (!(err instanceof InvalidConfigError)) throw err;
    const message = err.message.replace(/\b(leaseDurationMs|renewDeadlineMs|retryPeriodMs)\b(?: \((\d+)ms\))?/g, (_all, key: keyof typeof FLAG_OF, n?: string) =>
      n === undefined ? FLAG_OF[key] : `${FLAG_OF[key]} (${typed[key] ?? `${n}ms, the default`})`,
    );
    throw new InvalidConfigError(message);
  }
}

/** resolveIdentity returns --identity (validated) or the default identity. */
export function resolveIdentity(opts: CommonOptions): string {
  return opts.identity !== undefined ? validateIdentity(opts.identity) : defaultIdentity();
}

/**
 * StoreTarget is a checked --store: what it names, and how to open it. Checking is pure (no
 * connection, no file), so every flag can be refused before anything is touched.
 */
export interface StoreTarget {
  /** The URL with any password hidden. */
  readonly label: string;
  open(): Promise<LeaseStore>;
}

/**
 * storeTarget checks --store / BATON_STORE / the default store for a command. A store that
 * lives inside one process (`memory:`, `sqlite::memory:`) is refused: each `baton` process would
 * see its own. With `mode` 'read' (status, is-leader, release) a SQLite file that does not exist
 * is refused too: reading must not create a store.
 */
export function storeTarget(opts: CommonOptions, mode: 'use' | 'read' = 'use'): StoreTarget {
  const parsed = parseStoreUrl(opts.store ?? defaultStoreUrl());
  const { descriptor, config, label } = parsed;
  const inProcess = !descriptor.crossProcess || (descriptor.name === 'sqlite' && config === ':memory:');
  if (inProcess) {
    throw new InvalidConfigError(`store: "${label}" lives inside one process and cannot be shared by baton commands; use sqlite:PATH on one host, or a shared store (postgres://, redis://, etcd://, …)`);
  }
  if (mode === 'read' && descriptor.name === 'sqlite' && typeof config === 'string' && !existsSync(config)) {
    throw new InvalidConfigError(`no store at ${config} (nothing has used it yet; check --store or BATON_STORE)`);
  }
  return { label, open: () => descriptor.open(config, { env: process.env }) };
}

/** openCliStore opens a checked store (storeTarget), or checks and opens --store. */
export async function openCliStore(target: StoreTarget | CommonOptions, mode: 'use' | 'read' = 'use'): Promise<LeaseStore> {
  return ('open' in target && typeof target.open === 'function' ? (target as StoreTarget) : storeTarget(target as CommonOptions, mode)).open();
}

/** storeLabel is the store URL with any password hidden. */
export function storeLabel(opts: CommonOptions): string {
  return redactUrl(opts.store ?? defaultStoreUrl());
}

/**
 * makeElector builds an elector from the common options (followed by the OTLP exporter when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set); `extra.candidate` registers it (cli/candidate-flags.ts).
 */
export function makeElector(store: LeaseStore, opts: CommonOptions, lock: string, timing = resolveTimingOptions(opts), extra: Pick<LeaderElectorOptions, 'progressTimeoutMs' | 'beforeRelease' | 'candidate'> = {}): LeaderElector {
  const elector = new LeaderElector({ store, lock, identity: resolveIdentity(opts), ...timing, ...extra });
  exportTelemetry(elector, storeLabel(opts));
  return elector;
}

/** requireCommand returns the words after `--`, or throws a usage error whose example fits the command. */
export function requireCommand(words: string[] | undefined, name: string, example = `baton ${name} --lock NAME -- ./job.sh`): string[] {
  if (!words || words.length === 0 || words[0] === '') {
    throw new UsageError(`${name}: missing the command to run after "--" (e.g. ${example})`);
  }
  return words;
}

/** CliExit is re-exported for the commands (it lives with the exit codes). */
export { CliExit } from './exit-codes.js';

/**
 * printError writes one line for `err` (a stack only with --debug) and returns its exit code
 * (exit-codes.ts). A baton error's message is shown whole (escaped and shortened by
 * `printable`); anything else shows its first line only.
 */
export function printError(err: unknown, debug = false): number {
  const code = exitCodeFor(err);
  // A CliExit was decided (and explained) by the command itself.
  if (err instanceof CliExit) return code;
  const message = err instanceof BatonError ? err.message : errorMessage(err);
  say('error', message || 'unknown error', 'error', { exitCode: code });
  if (debug && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  return code;
}

/** configError is shorthand for a bad option value. */
export function configError(message: string): InvalidConfigError {
  return new InvalidConfigError(message);
}

/** info writes a human line on stderr (stdout is left to commands and their children); --quiet drops it. */
export function info(message: string, event = 'info', fields?: Record<string, unknown>): void {
  say('info', message, event, fields);
}

/** warn writes a line about trouble on stderr; --quiet keeps it. */
export function warn(message: string, event = 'warn', fields?: Record<string, unknown>): void {
  say('warn', message, event, fields);
}

/** withOutputOptions adds --quiet and --log-format to a long-running command (main.ts applies them). */
export function withOutputOptions(cmd: Command): Command {
  return cmd
    .option('-q, --quiet', 'print only warnings and errors on stderr')
    .addOption(new Option('--log-format <format>', 'stderr lines: human or json (one object per line)').choices(['human', 'json']).default('human').env('BATON_LOG_FORMAT'));
}

export { printable, outputSettings };
