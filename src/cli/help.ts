/**
 * Help that teaches: examples under each command's --help, and the top-level help grouped by
 * what the commands are for, followed by the exit codes and the environment variables.
 * Descriptions are written as plain sentences; commander wraps them to the terminal's width.
 */
import type { Command } from 'commander';
import { EXIT_CODES } from './exit-codes.js';

/** examples renders a command's examples for `addHelpText('after', …)`: a comment, then the line. */
export function examples(list: ReadonlyArray<readonly [what: string, line: string]>): string {
  return `\nExamples:\n${list.map(([what, line]) => `  # ${what}\n  $ ${line}`).join('\n\n')}\n`;
}

/** COMMAND_GROUPS: the heading each top-level command is listed under in `baton --help`. */
const COMMAND_GROUPS: Record<string, string> = {
  run: 'Leadership:',
  'is-leader': 'Leadership:',
  status: 'Leadership:',
  release: 'Leadership:',
  handover: 'Leadership:',
  shards: 'Leadership:',
  cron: 'Jobs:',
  once: 'Jobs:',
  lock: 'Jobs:',
  serve: 'Sidecar:',
  aws: 'AWS:',
};

/** groupCommands puts each top-level command under its heading ("Tools:" for the rest). */
export function groupCommands(program: Command): void {
  for (const cmd of program.commands) cmd.helpGroup(COMMAND_GROUPS[cmd.name()] ?? 'Tools:');
  program.commandsGroup('Tools:').helpCommand('help [command]', 'show the help of a command');
}

/** Variables baton reads that no flag names. */
const OTHER_VARIABLES: ReadonlyArray<readonly [string, string]> = [
  ['XDG_STATE_HOME', 'where the default SQLite store lives: $XDG_STATE_HOME/baton/baton.db (else ~/.local/state/baton/baton.db)'],
  ['BATON_SQLITE_DRIVER', 'node or better-sqlite3: the SQLite driver to use (default: node:sqlite when the Node version has it)'],
  ['PG*, KUBECONFIG, AWS_*', 'read by the store\'s own client library (docs/stores)'],
  ['OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_*', 'run, serve, cron and once send a span per term and leader gauges over OTLP/HTTP JSON (docs/serve.md)'],
];

/** Variables baton sets for the command it runs. */
const CHILD_VARIABLES = 'BATON_LOCK, BATON_IDENTITY, BATON_TERM (the fencing token); cron adds BATON_SLOT, once BATON_KEY and BATON_ATTEMPT';

/**
 * topLevelHelp is what `baton --help` prints after the commands: the exit codes, the variables
 * behind flags (found on the registered options, so the list cannot drift) and the others.
 */
export function topLevelHelp(program: Command): string {
  const byVariable = new Map<string, string>();
  const visit = (cmd: Command) => {
    for (const o of cmd.options) if (o.envVar && !byVariable.has(o.envVar)) byVariable.set(o.envVar, o.long ?? o.flags);
    for (const sub of cmd.commands) visit(sub);
  };
  visit(program);
  const width = Math.max(...EXIT_CODES.map(([c]) => c.length));
  const codes = EXIT_CODES.map(([code, meaning]) => `  ${code.padEnd(width)}  ${meaning}`).join('\n');
  const vars = [...byVariable].sort(([a], [b]) => a.localeCompare(b)).map(([v, flag]) => `  ${v} (${flag})`);
  const others = OTHER_VARIABLES.map(([v, what]) => `  ${v}: ${what}`);
  return [
    '',
    'Exit codes:',
    codes,
    '',
    'Environment variables (a flag given on the command line wins):',
    ...vars,
    ...others,
    `  Set for the command baton runs: ${CHILD_VARIABLES}`,
    '',
    'Run "baton COMMAND --help" for a command\'s options and examples; "baton completion bash|zsh|fish" for shell completion.',
    '',
  ].join('\n');
}
