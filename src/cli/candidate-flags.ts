/**
 * The candidate-registry flags of the campaigning commands (run, serve, cron): what this instance
 * says of itself in the lock's registry (core/candidates.ts) and its preference rule.
 *
 * The registry is on when any of these is given (flag or variable): `--register`,
 * `--app-version`, `--priority`, `--label`, `--prefer`. Off, a candidate writes nothing at rest,
 * as before; on, it writes one ledger entry per refresh period (the lease duration; on etcd and
 * ZooKeeper nothing at rest: its entry rides on its own lease or session), is listed by
 * `baton status` and the sidecar's GET /candidates, can be named by `baton handover --to`, and a
 * leader stopped gracefully hands over to the best live candidate instead of releasing to a race.
 */
import { Option, type Command } from 'commander';
import { InvalidConfigError } from '../core/errors.js';
import { directedHandoverRefusal } from '../core/handover.js';
import { PREFER_VALUES, validateAppVersion, type Prefer } from '../core/candidates.js';
import type { CandidateOptions } from '../core/candidate-side.js';
import type { LeaseStore } from '../core/store.js';

/** CandidateFlags are the parsed options withCandidateOptions adds. */
export interface CandidateFlags {
  register?: boolean;
  appVersion?: string;
  priority?: string;
  label?: string[];
  prefer?: string;
}

/** withCandidateOptions adds --register, --app-version, --priority, --label and --prefer. */
export function withCandidateOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--register', 'list this instance in the lock\'s candidate registry (implied by the four flags below): baton status shows it, baton handover --to can name it, a graceful stop hands over to the best live candidate'))
    .addOption(new Option('--app-version <v>', 'this instance\'s application version, semver (e.g. 2.4.1); --prefer newest ranks by it').env('BATON_APP_VERSION'))
    .addOption(new Option('--priority <n>', 'this instance\'s priority, an integer (default 0); --prefer priority ranks by it').env('BATON_PRIORITY'))
    .addOption(new Option('--label <k=v>', 'a label shown in the registry (repeatable; BATON_LABELS=k=v,k2=v2)').env('BATON_LABELS').argParser((v: string, previous: string[] | undefined) => [...(previous ?? []), v]))
    .addOption(new Option('--prefer <rule>', `hand leadership over once to a live candidate ranking strictly higher: ${PREFER_VALUES.join(', ')} (default: none)`).env('BATON_PREFER'));
}

const LABEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._\/-]{0,62}$/;

/**
 * resolveCandidate checks the registry flags (one line naming the bad value, InvalidConfigError:
 * exit 78) and returns the elector's `candidate` option, or undefined when none was given (no
 * registry, nothing written at rest).
 */
export function resolveCandidate(flags: CandidateFlags): CandidateOptions | undefined {
  const { register, appVersion, priority, label, prefer } = flags;
  if (!register && appVersion === undefined && priority === undefined && label === undefined && prefer === undefined) return undefined;
  const out: { appVersion?: string; priority?: number; labels?: Record<string, string>; prefer?: Prefer } = {};
  if (appVersion !== undefined) out.appVersion = validateAppVersion(appVersion.trim(), '--app-version');
  if (priority !== undefined) {
    const n = Number(priority.trim());
    if (!/^[+-]?\d+$/.test(priority.trim()) || !Number.isSafeInteger(n)) throw new InvalidConfigError(`--priority: "${priority}" is not an integer (e.g. 10 or -1)`);
    out.priority = n;
  }
  if (label !== undefined) out.labels = parseLabels(label);
  if (prefer !== undefined) {
    if (!(PREFER_VALUES as readonly string[]).includes(prefer.trim())) throw new InvalidConfigError(`--prefer: "${prefer}" is not a rule; use ${PREFER_VALUES.join(', ')}`);
    out.prefer = prefer.trim() as Prefer;
  }
  return out;
}

/** parseLabels reads `k=v` words; each may hold several, comma-separated (as BATON_LABELS does). */
function parseLabels(words: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const word of words.flatMap((w) => w.split(',')).map((w) => w.trim()).filter((w) => w !== '')) {
    const eq = word.indexOf('=');
    const name = eq > 0 ? word.slice(0, eq) : '';
    if (!LABEL_NAME.test(name)) throw new InvalidConfigError(`--label: "${word}" is not NAME=VALUE (a name of letters, digits and . _ / -, e.g. zone=eu-west-1a)`);
    const value = word.slice(eq + 1);
    if (value.length > 200 || /[\u0000-\u001f]/.test(value)) throw new InvalidConfigError(`--label: the value of "${name}" must be at most 200 printable characters`);
    labels[name] = value;
  }
  return labels;
}

/**
 * checkCandidateStore checks the registry flags against the opened store. `--prefer` needs a
 * compare-and-set store with a ledger: refused otherwise (InvalidConfigError, exit 78, naming the
 * flag). The other flags there do nothing: the returned line says so (the caller warns).
 */
export function checkCandidateStore(store: LeaseStore, candidate: CandidateOptions | undefined): string | undefined {
  if (!candidate) return undefined;
  const queue = directedHandoverRefusal(store);
  const noLedger = !store.ledger && !store.presence ? `the ${store.kind} store has no ledger to keep the candidate registry in` : undefined;
  const why = queue ?? noLedger;
  if (why === undefined) return undefined;
  if (candidate.prefer !== undefined) throw new InvalidConfigError(`--prefer: ${why}; leadership cannot be moved by preference there`);
  return `${why}: --register, --app-version, --priority and --label do nothing there`;
}
