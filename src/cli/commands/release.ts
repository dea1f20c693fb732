import { Command } from 'commander';
import { ExitCode } from '../exit-codes.js';
import { parseDuration } from '../../core/duration.js';
import { validateIdentity } from '../../core/options.js';
import { requestStepDown } from '../../core/step-down.js';
import { CliExit, info, openCliStore, requireLock, withLockOption, withStoreOption, type CommonOptions } from '../common.js';

/** register adds `baton release`. */
export function register(program: Command): void {
  const cmd = program
    .command('release')
    .summary('ask the holder to step down and wait until it has released')
    .description(
      'Ask the current holder (or ID) to step down. The holder stops its work first, then releases;\n' +
        'a lease is never freed while its holder may still act. Exit 0 once released, 75 on timeout,\n' +
        '1 if ID does not hold the lock.',
    );
  withStoreOption(cmd);
  withLockOption(cmd);
  cmd
    .option('--identity <id>', 'only if this holder holds it')
    .option('--timeout <d>', 'how long to wait for the release', '30s')
    .action(async (opts: CommonOptions & { timeout: string }) => {
      const lock = requireLock(opts);
      const identity = opts.identity !== undefined ? validateIdentity(opts.identity) : undefined;
      const timeoutMs = parseDuration(opts.timeout, '--timeout');
      const store = await openCliStore(opts);
      try {
        const r = await requestStepDown(store, lock, { identity, timeoutMs });
        if (r.outcome === 'not-holder') {
          info(identity ? `"${lock}" is not held by ${identity}` : `"${lock}" is not held`);
          throw new CliExit(ExitCode.no);
        }
        info(`"${lock}" released${r.record?.holder ? `; now held by ${r.record.holder} (term ${r.record.term})` : ''}`);
        throw new CliExit(ExitCode.ok);
      } finally {
        await store.close();
      }
    });
}
