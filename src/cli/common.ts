/**
 * Shared CLI plumbing: the common options, their validation, and how errors become one line
 * on stderr plus a sysexits-style exit code.
 */
import { Command, Option } from 'commander';
import { LeaderElector } from '../core/elector.js';
import { InvalidConfigError, UsageError, errorMessage } from '../core/errors.js';
import { CliExit, exitCodeFor } from './exit-codes.js';
import { parseDuration } from '../core/duration.js';
import { resolveTiming, validateIdentity, validateLockName, type Timing } from '../core/options.js';
import { defaultIdentity } from '../core/identity.js';
import { defaultStoreUrl, openStore, redactUrl } from '../stores/registry.js';
import type { LeaseStore } from '../core/store.js';

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

/** resolveTimingOptions parses the duration flags and validates them together. */
export function resolveTimingOptions(opts: CommonOptions, defaults: Partial<Timing> = {}): Timing {
  const partial: Partial<Timing> = { ...defaults };
  if (opts.leaseDuration !== undefined) partial.leaseDurationMs = parseDuration(opts.leaseDuration, '--lease-duration');
  if (opts.renewDeadline !== undefined) partial.renewDeadlineMs = parseDuration(opts.renewDeadline, '--renew-deadline');
  if (opts.retryPeriod !== undefined) partial.retryPeriodMs = parseDuration(opts.retryPeriod, '--retry-period');
  try {
    return resolveTiming(partial);
  } catch (err) {
    // The library names options as the API spells them; on the command line, name the flags.
    if (!(err instanceof InvalidConfigError)) throw err;
    throw new InvalidConfigError(err.message.replace(/\b(leaseDuration|renewDeadline|retryPeriod)\b/g, (name) => FLAG_OF[name]!));
  }
}

const FLAG_OF: Record<string, string> = { leaseDuration: '--lease-duration', renewDeadline: '--renew-deadline', retryPeriod: '--retry-period' };

/** resolveIdentity returns --identity (validated) or the default identity. */
export function resolveIdentity(opts: CommonOptions): string {
  return opts.identity !== undefined ? validateIdentity(opts.identity) : defaultIdentity();
}

/** openCliStore opens --store / BATON_STORE / the default store. */
export async function openCliStore(opts: CommonOptions): Promise<LeaseStore> {
  return openStore(opts.store ?? defaultStoreUrl());
}

/** storeLabel is the store URL with any password hidden. */
export function storeLabel(opts: CommonOptions): string {
  return redactUrl(opts.store ?? defaultStoreUrl());
}

/** makeElector builds an elector from the common options. */
export function makeElector(store: LeaseStore, opts: CommonOptions, lock: string, timing = resolveTimingOptions(opts)): LeaderElector {
  return new LeaderElector({ store, lock, identity: resolveIdentity(opts), ...timing });
}

/** requireCommand returns the words after `--`, or throws a usage error. */
export function requireCommand(words: string[] | undefined, name: string): string[] {
  if (!words || words.length === 0 || words[0] === '') {
    throw new UsageError(`${name}: missing the command to run after "--" (e.g. baton ${name} --lock NAME -- ./job.sh)`);
  }
  return words;
}

/** CliExit is re-exported for the commands (it lives with the exit codes). */
export { CliExit } from './exit-codes.js';

/** printError writes one line for `err` (a stack only with --debug) and returns its exit code (exit-codes.ts). */
export function printError(err: unknown, debug = false): number {
  const code = exitCodeFor(err);
  // A CliExit was decided (and explained) by the command itself.
  if (err instanceof CliExit) return code;
  process.stderr.write(`baton: ${oneLine(errorMessage(err))}\n`);
  if (debug && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  return code;
}

function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, ' ').trim();
}

/** configError is shorthand for a bad option value. */
export function configError(message: string): InvalidConfigError {
  return new InvalidConfigError(message);
}

/** info writes a human line on stderr (stdout is left to commands and their children). */
export function info(message: string): void {
  process.stderr.write(`baton: ${message}\n`);
}
