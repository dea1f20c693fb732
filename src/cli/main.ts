#!/usr/bin/env node
/**
 * The baton command line. Each command lives in cli/commands/<name>.ts and exports `register`.
 * Errors end as one line on stderr with a sysexits-style code (64 usage, 69 store unavailable,
 * 75 leadership lost or timed out, 78 configuration); --debug adds the stack.
 */
import { Command, CommanderError } from 'commander';
import { BATON_VERSION } from '../core/identity.js';
import { ExitCode, exitCodeFor } from './exit-codes.js';
import { printError } from './common.js';
import { COMMANDS } from './commands/index.js';

export async function main(argv: string[]): Promise<number> {
  const debug = argv.includes('--debug');
  const program = new Command('baton')
    .description('Leader election and singleton work for fleets of redundant instances.')
    .version(BATON_VERSION, '-V, --version')
    .option('--debug', 'show stack traces on errors')
    .enablePositionalOptions()
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      outputError: (str, write) => write(`baton: ${str.replace(/^error: /, '').trim().split('\n')[0]}\n`),
    });
  for (const register of COMMANDS) register(program);
  for (const cmd of program.commands) {
    cmd.exitOverride().passThroughOptions().option('--debug', 'show stack traces on errors');
    cmd.configureOutput({ outputError: (str, write) => write(`baton: ${cmd.name()}: ${str.replace(/^error: /, '').trim().split('\n')[0]}\n`) });
  }
  try {
    if (argv.length <= 2) {
      program.outputHelp();
      return ExitCode.usage;
    }
    await program.parseAsync(argv);
    return ExitCode.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return ExitCode.ok;
      return exitCodeFor(err);
    }
    return printError(err, debug);
  }
}

const code = await main(process.argv);
// Exit once stdout has drained, even if a command left a handle open.
process.stdout.write('', () => process.exit(code));
