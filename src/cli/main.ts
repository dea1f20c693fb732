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
import { groupCommands, topLevelHelp } from './help.js';
import { configureOutput, printable } from './output.js';
import { shutdownTelemetry } from './telemetry.js';

/** commanderLine is commander's error as baton's one line (its first line, escaped). */
const commanderLine = (prefix: string, str: string) =>
  // Keep commander's "(Did you mean …?)" line, on the same line.
  `${prefix}${printable(str.replace(/^error: /, '').trim().split(/\s*\n\s*/).join(' '))}\n`;

export async function main(argv: string[]): Promise<number> {
  const debug = argv.includes('--debug');
  const program = new Command('baton')
    .description('Leader election and singleton work for fleets of redundant instances.')
    .version(BATON_VERSION, '-V, --version')
    .option('--debug', 'show stack traces on errors')
    .enablePositionalOptions()
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({ outputError: (str, write) => write(commanderLine('baton: ', str)) });
  for (const register of COMMANDS) register(program);
  for (const cmd of program.commands) {
    cmd.exitOverride().passThroughOptions().option('--debug', 'show stack traces on errors');
    cmd.configureOutput({ outputError: (str, write) => write(commanderLine(`baton: ${cmd.name()}: `, str)) });
  }
  groupCommands(program);
  program.addHelpText('after', () => topLevelHelp(program));
  // --quiet and --log-format (long-running commands) apply before the command does anything.
  program.hook('preAction', (_program, action) => {
    const o = action.opts() as { quiet?: boolean; logFormat?: string };
    configureOutput({ quiet: !!o.quiet, format: o.logFormat === 'json' ? 'json' : 'human' });
  });
  try {
    if (argv.length <= 2) {
      program.outputHelp();
      return ExitCode.usage;
    }
    // `baton help NOSUCH` is an unknown command too (commander would print nothing and exit 0).
    const [first, topic] = argv.slice(2);
    if (first === 'help' && topic !== undefined && !program.commands.some((c) => c.name() === topic || c.aliases().includes(topic))) {
      program.args = [topic];
      (program as unknown as { unknownCommand(): never }).unknownCommand();
    }
    await program.parseAsync(argv);
    await shutdownTelemetry();
    return ExitCode.ok;
  } catch (err) {
    await shutdownTelemetry();
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
