import { Command } from 'commander';
import { ExitCode } from '../exit-codes.js';
import { parseDuration } from '../../core/duration.js';
import { validateIdentity } from '../../core/options.js';
import { requestStepDown } from '../../core/step-down.js';
import { deadLocalHolder } from '../../view/lease-view.js';
import { CliExit, info, openCliStore, requireLock, storeTarget, withLockOption, withStoreOption, type CommonOptions } from '../common.js';
import { examples } from '../help.js';

/** register adds `baton release`. */
export function register(program: Command): void {
  const cmd = program
    .command('release')
    .summary('ask the holder to step down and wait until it has released')
    .description(
      'Ask the current holder (or ID) to step down. The holder stops its work first, then releases; ' +
        'a lease is never freed while its holder may still act. Exit 0 once released, 75 on timeout, ' +
        '1 if ID does not hold the lock.',
    );
  withStoreOption(cmd);
  withLockOption(cmd);
  cmd
    .option('--identity <id>', 'only if this holder holds it')
    .option('--timeout <d>', 'how long to wait for the release', '30s')
    .addHelpText(
      'after',
      examples([
        ['hand the lock over before maintenance on the leader\'s host', 'baton release --lock nightly-report'],
        ['only if web-3 holds it; wait at most 10s', 'baton release --lock nightly-report --identity web-3 --timeout 10s'],
      ]),
    )
    .action(async (opts: CommonOptions & { timeout: string }) => {
      const lock = requireLock(opts);
      const identity = opts.identity !== undefined ? validateIdentity(opts.identity) : undefined;
      const timeoutMs = parseDuration(opts.timeout, '--timeout');
      const store = await openCliStore(storeTarget(opts, 'read'));
      try {
        const before = await store.read(lock);
        const gone = before?.holder ? deadLocalHolder(before) : undefined;
        if (gone) info(`"${lock}": ${before!.holder}'s process (pid ${gone}) is not running on this host; its lease is no longer renewed`);
        const r = await requestStepDown(store, lock, { identity, timeoutMs });
        if (r.outcome === 'not-holder') {
          info(identity ? `"${lock}" is not held by ${identity}` : `"${lock}" is not held`);
          throw new CliExit(ExitCode.no);
        }
        if (r.outcome === 'expired') {
          // Nothing to wait for: the holder stopped renewing, so its lease ran out; baton frees nothing itself.
          info(`"${lock}" is no longer renewed by ${r.record.holder} (term ${r.record.term}): its lease ran out and the next candidate takes it`);
          throw new CliExit(ExitCode.ok);
        }
        info(`"${lock}" released${r.record?.holder ? `; now held by ${r.record.holder} (term ${r.record.term})` : ''}`);
        throw new CliExit(ExitCode.ok);
      } finally {
        await store.close();
      }
    });
}
