import { Command, Option } from 'commander';
import { ExitCode } from '../exit-codes.js';
import { parseDuration } from '../../core/duration.js';
import { InvalidConfigError, LeaseLostError, UsageError } from '../../core/errors.js';
import { validateIdentity } from '../../core/options.js';
import { directedHandoverRefusal, requestHandover } from '../../core/handover.js';
import { listCandidates } from '../../core/candidates.js';
import type { LeaseStore } from '../../core/store.js';
import { deadLocalHolder } from '../../view/lease-view.js';
import { CliExit, info, openCliStore, requireLock, storeTarget, withLockOption, withStoreOption, type CommonOptions } from '../common.js';
import { examples } from '../help.js';

interface HandoverCliOptions extends CommonOptions {
  to?: string;
  from?: string;
  timeout: string;
}

/** register adds `baton handover`. */
export function register(program: Command): void {
  const cmd = program
    .command('handover')
    .summary('hand the lock to a named candidate: the leader stops its work, then ID leads')
    .description(
      'Ask the holder of the lock to hand it to candidate ID (directed, drain-first): once ID has accepted, ' +
        'the holder stops its work exactly as on a step-down, then writes the lease to ID with a higher term, ' +
        'and ID leads next, without an expiry waited out or a race among the others. ID must be a live ' +
        'candidate of the lock registered in its candidate registry (run, serve or cron with --register, ' +
        '--app-version, --priority, --label or --prefer; see baton status). ID has the lease duration (at most ' +
        'half of --timeout) to accept; if it does not, the question is taken back and nothing changes. ' +
        'Exit 0 once ID leads (also when it already did), 1 if ID is not a live candidate or nobody (or not ' +
        '--from) holds the lock, 75 if not done within --timeout or the lease moved elsewhere meanwhile. On etcd ' +
        'and zk the candidates queued ahead of ID step back behind it first.',
    );
  withStoreOption(cmd);
  withLockOption(cmd);
  cmd
    .addOption(new Option('--to <id>', 'the candidate that should lead next (required)'))
    .option('--from <id>', 'only if this candidate holds the lock')
    .option('--timeout <d>', 'how long to wait until ID leads', '30s')
    .addHelpText(
      'after',
      examples([
        ['move the leader off a host before its maintenance, to a chosen instance', 'baton handover --lock nightly-report --to web-2'],
        ['only if web-1 still leads; wait at most 20s', 'baton handover --lock nightly-report --from web-1 --to web-2 --timeout 20s'],
        ['see the candidates and who would be preferred first', 'baton status --lock nightly-report'],
      ]),
    )
    .action(async (opts: HandoverCliOptions) => {
      const lock = requireLock(opts);
      if (opts.to === undefined) throw new UsageError('handover: missing --to ID (the candidate that should lead next; baton status --lock NAME lists them)');
      const to = flagIdentity(opts.to, '--to');
      const from = opts.from !== undefined ? flagIdentity(opts.from, '--from') : undefined;
      const timeoutMs = parseDuration(opts.timeout, '--timeout');
      if (timeoutMs < 100) throw new InvalidConfigError(`--timeout: "${opts.timeout}" is too short for a handover (at least 100ms)`);
      const store = await openCliStore(storeTarget(opts, 'read'));
      try {
        throw new CliExit(await handover(store, lock, to, from, timeoutMs, opts.timeout));
      } finally {
        await store.close();
      }
    });
}

/** handover runs one directed handover and says how it ended; returns the exit code. */
async function handover(store: LeaseStore, lock: string, to: string, from: string | undefined, timeoutMs: number, timeoutText: string): Promise<number> {
  const refusal = directedHandoverRefusal(store);
  if (refusal) throw new InvalidConfigError(`handover: ${refusal} (baton release hands over to the next in line)`);
  const before = await store.read(lock);
  const gone = before?.holder ? deadLocalHolder(before) : undefined;
  if (gone) info(`"${lock}": ${before!.holder}'s process (pid ${gone}) is not running on this host; its lease is no longer renewed, and it cannot hand over`);
  // The successor must accept within this, or the question is taken back (core/handover.ts);
  // half of --timeout at most, so the give and the take still fit in the rest.
  const ackTimeoutMs = Math.min(before?.leaseDurationMs ?? timeoutMs, timeoutMs / 2);
  let r;
  try {
    r = await requestHandover(store, lock, to, { from, timeoutMs, ackTimeoutMs });
  } catch (err) {
    if (!(err instanceof LeaseLostError)) throw err;
    const now = await store.read(lock).catch(() => null);
    throw new LeaseLostError(`handover: "${lock}" did not reach ${to} within --timeout ${timeoutText}${now?.holder ? ` (held by ${now.holder}, term ${now.term})` : ''}`);
  }
  switch (r.outcome) {
    case 'handed':
      info(`"${lock}" handed over to ${to} (term ${r.record.term}${before?.holder ? `, from ${before.holder} term ${before.term}` : ''})`);
      return ExitCode.ok;
    case 'already':
      info(`"${lock}" is already led by ${to} (term ${r.record.term}): nothing to do`);
      return ExitCode.ok;
    case 'not-held':
      info(!r.record?.holder ? `"${lock}" is not held: nobody to hand over from` : `"${lock}" is not held by ${from} (held by ${r.record.holder}, term ${r.record.term}): nothing changed`);
      return ExitCode.no;
    case 'not-candidate': {
      const keeps = r.record?.holder ? `; ${r.record.holder} keeps leading (term ${r.record.term})` : '';
      info(`not handed over: ${r.why}${keeps}${await otherCandidates(store, lock, [to, r.record?.holder])}`);
      return ExitCode.no;
    }
    case 'moved':
      info(`"${lock}" moved meanwhile (${r.record?.holder ? `now held by ${r.record.holder}, term ${r.record.term}` : 'now free'}); ${to} does not lead: try again`);
      return ExitCode.tempFail;
  }
}

/** otherCandidates names the registered candidates still campaigning, for a refused handover's line. */
async function otherCandidates(store: LeaseStore, lock: string, leaveOut: (string | null | undefined)[]): Promise<string> {
  if (!store.ledger && !store.presence) return '';
  const all = await listCandidates(store, lock).catch(() => []);
  const names = all.filter((c) => !c.left && !leaveOut.includes(c.identity)).map((c) => c.identity);
  if (names.length > 0) return `; other candidates: ${names.join(', ')}`;
  return all.length === 0 ? '; no candidate is registered (run, serve and cron register with --register or --app-version)' : '';
}

/** flagIdentity validates an identity given as `flag`, naming the flag in the error. */
function flagIdentity(value: string, flag: string): string {
  try {
    return validateIdentity(value);
  } catch (err) {
    if (err instanceof InvalidConfigError) throw new InvalidConfigError(err.message.replace(/^identity:/, `${flag}:`));
    throw err;
  }
}
