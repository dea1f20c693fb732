import { InvalidConfigError } from './errors.js';
import { MAX_LOCK_NAME_LENGTH } from './store.js';

/** Timing of an elector. Defaults are Kubernetes' client-go defaults. */
export interface Timing {
  /** How long a lease lasts without renewal, as other candidates count it. Default 15 s. */
  leaseDurationMs: number;
  /** The leader steps down if it has not renewed for this long. Default 10 s. */
  renewDeadlineMs: number;
  /** Interval between renewals, and between acquisition attempts when polling. Default 2 s. */
  retryPeriodMs: number;
  /** Acquisition retries wait retryPeriod × (1 + random × jitterFactor). Default 1.2. */
  jitterFactor: number;
}

/** DEFAULT_TIMING: lease 15 s, renew deadline 10 s, retry period 2 s, jitter 1.2. */
export const DEFAULT_TIMING: Readonly<Timing> = Object.freeze({
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
  jitterFactor: 1.2,
});

/** Upper bound for any duration option: one day. */
export const MAX_DURATION_MS = 24 * 60 * 60 * 1000;

/**
 * resolveTiming fills defaults and validates: every duration positive and at most one day,
 * leaseDuration > renewDeadline > retryPeriod × jitterFactor. Throws InvalidConfigError naming
 * the offending value. With `granularityMs` (a store that rounds leases up), leaseDuration is
 * rounded up to it: a server that rounds the lease up only makes it longer than we count.
 */
export function resolveTiming(partial: Partial<Timing> = {}, granularityMs?: number): Timing {
  const t: Timing = { ...DEFAULT_TIMING };
  for (const k of Object.keys(DEFAULT_TIMING) as (keyof Timing)[]) if (partial[k] !== undefined) t[k] = partial[k]!;
  for (const key of ['leaseDurationMs', 'renewDeadlineMs', 'retryPeriodMs'] as const) {
    const v = t[key];
    if (typeof v !== 'number') {
      throw new InvalidConfigError(`${key}: must be a number of milliseconds, got ${describeValue(v)}`);
    }
    if (!Number.isFinite(v) || v <= 0) {
      throw new InvalidConfigError(`${key}: must be a positive number of milliseconds, got ${String(v)}`);
    }
    if (v > MAX_DURATION_MS) {
      throw new InvalidConfigError(`${key}: ${v}ms is longer than the 24h limit`);
    }
  }
  if (typeof t.jitterFactor !== 'number' || !Number.isFinite(t.jitterFactor) || t.jitterFactor < 0 || t.jitterFactor > 10) {
    throw new InvalidConfigError(`jitterFactor: must be a number between 0 and 10, got ${describeValue(t.jitterFactor)}`);
  }
  if (!(t.leaseDurationMs > t.renewDeadlineMs)) {
    throw new InvalidConfigError(
      `leaseDurationMs (${t.leaseDurationMs}ms) must be greater than renewDeadlineMs (${t.renewDeadlineMs}ms)`,
    );
  }
  if (!(t.renewDeadlineMs > t.retryPeriodMs * t.jitterFactor)) {
    throw new InvalidConfigError(
      `renewDeadlineMs (${t.renewDeadlineMs}ms) must be greater than retryPeriodMs × jitterFactor (${t.retryPeriodMs}ms × ${t.jitterFactor})`,
    );
  }
  if (granularityMs && t.leaseDurationMs % granularityMs !== 0) {
    t.leaseDurationMs = Math.ceil(t.leaseDurationMs / granularityMs) * granularityMs;
  }
  return t;
}

const LOCK_NAME = /^[A-Za-z0-9][A-Za-z0-9._:\/-]*$/;

/** validateLockName checks a lock name: 1–200 characters of [A-Za-z0-9._:/-], not starting with punctuation. */
export function validateLockName(name: unknown, what = 'lock'): string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new InvalidConfigError(`${what}: a lock name is required and must not be empty`);
  }
  if (name.length > MAX_LOCK_NAME_LENGTH) {
    throw new InvalidConfigError(`${what}: name is ${name.length} characters; the limit is ${MAX_LOCK_NAME_LENGTH}`);
  }
  if (!LOCK_NAME.test(name)) {
    throw new InvalidConfigError(
      `${what}: ${JSON.stringify(name)} may contain only letters, digits and . _ : / - and must start with a letter or digit`,
    );
  }
  return name;
}

/** validateIdentity checks a candidate identity: 1–200 printable characters without spaces. */
export function validateIdentity(identity: unknown): string {
  if (typeof identity !== 'string' || identity.length === 0 || identity.length > 200 || !/^[\x21-\x7e]+$/.test(identity)) {
    const shown = typeof identity === 'string' ? JSON.stringify(identity) : `"${String(identity)}"`;
    throw new InvalidConfigError(`identity: ${shown} must be 1–200 printable characters without spaces`);
  }
  return identity;
}

/** describeValue shows a bad option value briefly: strings quoted, objects by their kind. */
export function describeValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (v === null || typeof v !== 'object') return String(v);
  return Array.isArray(v) ? 'an array' : 'an object';
}

/**
 * checkOptionKeys refuses an options object carrying a key that `known` does not list, naming
 * the key as the caller wrote it and, when it is a near miss (`leaseDuration` for
 * `leaseDurationMs`, another case), the key meant. `where` names the API (e.g. "LeaderElector").
 * A misspelt option silently ignored would leave a default in force that the caller thinks they
 * changed.
 */
export function checkOptionKeys(where: string, options: object | undefined, known: readonly string[]): void {
  if (options === undefined || options === null) return;
  if (typeof options !== 'object') throw new InvalidConfigError(`${where}: options must be an object, got ${describeValue(options)}`);
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const lower = key.toLowerCase();
    const meant = known.find((k) => k.toLowerCase() === lower || k.toLowerCase() === `${lower}ms` || `${k.toLowerCase()}ms` === lower);
    throw new InvalidConfigError(`${where}: unknown option "${key}"${meant ? ` (did you mean "${meant}"?)` : ''}; known options: ${known.join(', ')}`);
  }
}

/** TIMING_KEYS are the option keys every elector-backed API takes for its timing. */
export const TIMING_KEYS = ['leaseDurationMs', 'renewDeadlineMs', 'retryPeriodMs', 'jitterFactor'] as const;
