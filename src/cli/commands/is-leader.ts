import { hostname } from 'node:os';
import { Command, Option } from 'commander';
import { UsageError } from '../../core/errors.js';
import { ExitCode } from '../exit-codes.js';
import { leaseView } from '../../view/lease-view.js';
import { CliExit, openCliStore, requireLock, storeTarget, withLockOption, withStoreOption, type CommonOptions } from '../common.js';
import { examples } from '../help.js';
import { validateIdentity } from '../../core/options.js';

/** register adds `baton is-leader`; other strategies (e.g. AWS) hook in through `strategies`. */
export function register(program: Command): Command {
  const cmd = program
    .command('is-leader')
    .summary('exit 0 if this host (or --identity) holds the lock, 1 if not')
    .description(
      'Exit 0 if ID — by default, any holder whose recorded hostname is this host\'s — holds a live ' +
        'lease on the lock, 1 if not, 69 if the store cannot be reached. With --strategy asg-lowest or ' +
        'asg-tag it asks EC2 Auto Scaling instead (no store): 0 leader, 1 not, 69 AWS unreachable, ' +
        '78 not in an Auto Scaling group or AWS refused (docs/aws.md).',
    );
  withStoreOption(cmd);
  withLockOption(cmd);
  // AWS strategies (docs/aws.md) live in ./aws.ts, imported only when asked for.
  cmd
    .addOption(new Option('--strategy <name>', 'lease: a live lease in --store; asg-lowest / asg-tag: EC2 Auto Scaling').choices(['lease', 'asg-lowest', 'asg-tag']).default('lease'))
    .option('--json', 'print what was checked as JSON (asg-lowest, asg-tag)')
    .addOption(new Option('--tag <key>', 'leader tag key for asg-tag (default app:isLeader)').env('BATON_LEADER_TAG'));
  cmd.addHelpText(
    'after',
    examples([
      ['do leader-only work from a shell, PHP or Python script', 'if baton is-leader --lock queue-janitor; then php janitor.php; fi'],
      ['ask about one candidate, on a shared store', 'baton is-leader --store redis://cache:6379 --lock reports --identity web-3'],
      ['ask EC2 Auto Scaling instead of a store', 'baton is-leader --strategy asg-lowest'],
    ]),
  );
  cmd.option('--identity <id>', 'the holder to check for (default: any holder on this host)').action(async (opts: CommonOptions & { strategy?: string; json?: boolean; tag?: string }) => {
    if (opts.strategy !== undefined && opts.strategy !== 'lease') {
      const { awsIsLeader } = await import('./aws.js');
      throw new CliExit(await awsIsLeader(opts.strategy, opts));
    }
    if (opts.json) throw new UsageError('is-leader: --json is available with --strategy asg-lowest or asg-tag');
    const lock = requireLock(opts);
    const identity = opts.identity !== undefined ? validateIdentity(opts.identity) : undefined;
    // Reading never creates a store: a SQLite file that is not there is a 78, not an empty answer.
    const store = await openCliStore(storeTarget(opts, 'read'));
    try {
      const record = await store.read(lock);
      const view = record && leaseView(record, { serverExpiry: store.capabilities.serverExpiry });
      const mine = !!view?.live && (identity ? view.holder === identity : view.hostname === hostname());
      throw new CliExit(mine ? ExitCode.ok : ExitCode.no);
    } finally {
      await store.close();
    }
  });
  return cmd;
}
