/**
 * Where the singleton jobs keep their durable state in a store's ledger (core/store.ts), and
 * the small read / compare-and-set helpers they share.
 *
 * Keys (all under the `baton/` namespace, at most 512 characters):
 *
 *   baton/cron/<lock>        one entry per cron lock: highest term, last claimed slot, recent slots
 *   baton/once/<key>         one entry per run-once key: the outcome (or the run in progress)
 *   baton/tasklock/<name>    one entry per task lock: holder, hold id, lease, first-sight stamps
 *
 * Values are JSON with a `v` (format version) field. Every change is one `put` with the
 * version read just before (compare-and-set), so two writers never both succeed from the same
 * state; a lost race is re-read and decided again.
 */
import { InvalidConfigError, StoreUnavailableError } from '../core/errors.js';
import type { Ledger, LedgerEntry, LeaseStore } from '../core/store.js';

/** LEDGER_PREFIX namespaces every key the jobs write. */
export const LEDGER_PREFIX = 'baton/';

/** cronLedgerKey is the key of a cron lock's single entry. */
export const cronLedgerKey = (lock: string): string => `${LEDGER_PREFIX}cron/${lock}`;
/** onceLedgerKey is the key of a run-once key's outcome. */
export const onceLedgerKey = (key: string): string => `${LEDGER_PREFIX}once/${key}`;
/** taskLockLedgerKey is the key of a task lock's record. */
export const taskLockLedgerKey = (name: string): string => `${LEDGER_PREFIX}tasklock/${name}`;

const JOB_KEY = /^[A-Za-z0-9][A-Za-z0-9._:\/@+=-]*$/;
/** MAX_JOB_KEY_LENGTH bounds run-once keys (a release version, a commit, a migration id). */
export const MAX_JOB_KEY_LENGTH = 200;

/**
 * validateJobKey checks a run-once key: 1–200 characters of letters, digits and . _ : / @ + = -,
 * starting with a letter or digit (so `v1.2.3`, `1.4.0+build.7`, `migrate@a1b2c3` all work).
 */
export function validateJobKey(key: unknown, what = 'key'): string {
  if (typeof key !== 'string' || key.length === 0) throw new InvalidConfigError(`${what}: must not be empty`);
  if (key.length > MAX_JOB_KEY_LENGTH) throw new InvalidConfigError(`${what}: is ${key.length} characters; the limit is ${MAX_JOB_KEY_LENGTH}`);
  if (!JOB_KEY.test(key)) {
    throw new InvalidConfigError(`${what}: "${key}" may contain only letters, digits and . _ : / @ + = - and must start with a letter or digit`);
  }
  return key;
}

/** requireLedger returns the store's ledger, or explains that this store cannot keep job state. */
export function requireLedger(store: LeaseStore, feature: string): Ledger {
  if (!store.ledger) {
    throw new InvalidConfigError(`${feature}: the ${store.kind} store has no durable ledger, which ${feature} needs to record its state`);
  }
  return store.ledger;
}

/** JsonEntry is a ledger entry with its value parsed. */
export interface JsonEntry<T> {
  readonly value: T;
  readonly version: string;
}

/** readJson reads and parses one entry; a value that is not JSON reads as corrupt (not absent). */
export async function readJson<T>(ledger: Ledger, key: string): Promise<JsonEntry<T> | null> {
  return parseEntry<T>(await ledger.get(key));
}

function parseEntry<T>(entry: LedgerEntry | null | undefined): JsonEntry<T> | null {
  if (!entry) return null;
  try {
    return { value: JSON.parse(entry.value) as T, version: entry.version };
  } catch {
    // Treating it as absent would let a job run twice; refuse instead.
    throw new StoreUnavailableError(`ledger: entry "${entry.key}" is not valid JSON; fix or remove it by hand`);
  }
}

/** What `updateJson`'s decide function returns: a new value to write, or a result to stop with. */
export type Decision<T, R> = { write: T; then: (written: JsonEntry<T>) => R } | { done: R };

/**
 * updateJson is a compare-and-set loop: read the entry, let `decide` look at it, write what it
 * asks with the version it saw, and on a lost race decide again from the fresh entry. Gives up
 * with StoreUnavailableError after `attempts` lost races (a runaway writer, not a normal case).
 */
export async function updateJson<T, R>(
  ledger: Ledger,
  key: string,
  decide: (current: JsonEntry<T> | null) => Decision<T, R>,
  attempts = 20,
): Promise<R> {
  let current = await readJson<T>(ledger, key);
  for (let i = 0; i < attempts; i++) {
    const d = decide(current);
    if ('done' in d) return d.done;
    const result = await ledger.put(key, current ? current.version : null, JSON.stringify(d.write));
    if (result.ok) return d.then({ value: d.write, version: result.entry.version });
    current = result.current !== undefined ? parseEntry<T>(result.current) : await readJson<T>(ledger, key);
  }
  throw new StoreUnavailableError(`ledger: "${key}" kept changing under ${attempts} compare-and-set attempts`);
}
