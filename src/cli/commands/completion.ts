/**
 * `baton completion bash|zsh|fish` prints a completion script built from the commands and
 * options registered now, so it cannot drift from the CLI: command names (and `aws`'s
 * subcommands) with their summaries, each command's flags, and file names after `--`.
 */
import { Argument, Command, type Option } from 'commander';
import { CliExit } from '../common.js';
import { examples } from '../help.js';

type Shell = 'bash' | 'zsh' | 'fish';

/** register adds `baton completion`. */
export function register(program: Command): void {
  program
    .command('completion')
    .summary('print a shell completion script (bash, zsh or fish)')
    .description('Print a completion script for SHELL on stdout. Load it in your shell\'s start-up file, as the examples show.')
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(['bash', 'zsh', 'fish']))
    .addHelpText(
      'after',
      examples([
        ['bash: in ~/.bashrc', 'source <(baton completion bash)'],
        ['zsh: in ~/.zshrc (after compinit)', 'source <(baton completion zsh)'],
        ['fish', 'baton completion fish > ~/.config/fish/completions/baton.fish'],
      ]),
    )
    .action((shell: Shell) => {
      process.stdout.write(completionScript(program, shell));
      throw new CliExit(0);
    });
}

interface Entry {
  name: string;
  summary: string;
  flags: { long: string; description: string; takesValue: boolean; choices?: readonly string[] }[];
  subcommands: Entry[];
}

function entry(cmd: Command): Entry {
  const options = (cmd.options as readonly Option[]).filter((o) => !o.hidden && o.long);
  return {
    name: cmd.name(),
    summary: cmd.summary() || cmd.description().split('. ')[0] || '',
    flags: [...options.map((o) => ({ long: o.long!, description: o.description, takesValue: o.required || o.optional, choices: o.argChoices })), { long: '--help', description: 'show help', takesValue: false }],
    subcommands: cmd.commands.map(entry),
  };
}

/** completionScript is the completion script for `shell`, for the commands `program` has now. */
export function completionScript(program: Command, shell: Shell): string {
  const commands = program.commands.map(entry);
  if (shell === 'bash') return bash(commands);
  if (shell === 'zsh') return zsh(commands);
  return fish(commands);
}

function bash(commands: Entry[]): string {
  const cases = commands
    .map((c) => {
      const words = [...c.subcommands.map((s) => s.name), ...c.flags.map((f) => f.long)].join(' ');
      const subs = c.subcommands.map((s) => `      ${s.name}) words="${s.flags.map((f) => f.long).join(' ')}" ;;`).join('\n');
      const sub = c.subcommands.length ? `\n    case "\${COMP_WORDS[2]}" in\n${subs}\n    esac` : '';
      return `    ${c.name}) words="${words}"${sub} ;;`;
    })
    .join('\n');
  return `# baton completion for bash: source <(baton completion bash)
_baton() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" words="" i
  # After "--" the words are the command baton runs: complete file names.
  for ((i = 1; i < COMP_CWORD; i++)); do [[ "\${COMP_WORDS[i]}" == "--" ]] && return 0; done
  if [[ $COMP_CWORD -eq 1 ]]; then
    COMPREPLY=($(compgen -W "${commands.map((c) => c.name).join(' ')} help" -- "$cur"))
    return 0
  fi
  [[ "$cur" == -* || $COMP_CWORD -le 2 ]] || return 0
  case "\${COMP_WORDS[1]}" in
${cases}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -o bashdefault -F _baton baton
`;
}

const zq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function zsh(commands: Entry[]): string {
  const described = (list: Entry[]) => list.map((c) => zq(`${c.name.replace(/:/g, '\\:')}:${c.summary}`)).join(' ');
  const valueOf = (f: Entry['flags'][number]) => (f.choices ? `:value:(${f.choices.join(' ')})` : f.takesValue ? ':value:' : '');
  const flagsOf = (e: Entry) => e.flags.map((f) => zq(`${f.long}[${f.description.replace(/[[\]]/g, '')}]${valueOf(f)}`)).join(' ');
  const cases = commands
    .map((c) => {
      if (c.subcommands.length === 0) return `    (${c.name}) _arguments -s ${flagsOf(c)} '*:file:_files' ;;`;
      const subs = c.subcommands.map((s) => `        (${s.name}) _arguments -s ${flagsOf(s)} ;;`).join('\n');
      return `    (${c.name})\n      if (( CURRENT == 3 )); then\n        local -a subs; subs=(${described(c.subcommands)}); _describe 'subcommand' subs\n      else\n        case $words[3] in\n${subs}\n        esac\n      fi ;;`;
    })
    .join('\n');
  return `#compdef baton
# baton completion for zsh: source <(baton completion zsh)   (after compinit)
_baton() {
  local -a commands
  commands=(${described(commands)})
  if (( CURRENT == 2 )); then _describe 'command' commands; return; fi
  # After "--" the words are the command baton runs.
  if (( \${words[(I)--]} > 0 && \${words[(I)--]} < CURRENT )); then _normal; return; fi
  case $words[2] in
${cases}
  esac
}
compdef _baton baton
`;
}

const fq = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

function fish(commands: Entry[]): string {
  const lines = ['# baton completion for fish: baton completion fish > ~/.config/fish/completions/baton.fish', 'complete -c baton -f'];
  const flag = (cond: string, f: Entry['flags'][number]) =>
    `complete -c baton -n ${fq(cond)} -l ${f.long.replace(/^--/, '')}${f.takesValue ? ' -r' : ''}${f.choices ? ` -a ${fq(f.choices.join(' '))}` : ''} -d ${fq(f.description)}`;
  for (const c of commands) {
    lines.push(`complete -c baton -n __fish_use_subcommand -a ${c.name} -d ${fq(c.summary)}`);
    for (const f of c.flags) lines.push(flag(`__fish_seen_subcommand_from ${c.name}`, f));
    for (const s of c.subcommands) {
      lines.push(`complete -c baton -n ${fq(`__fish_seen_subcommand_from ${c.name}`)} -a ${s.name} -d ${fq(s.summary)}`);
      for (const f of s.flags) lines.push(flag(`__fish_seen_subcommand_from ${s.name}`, f));
    }
  }
  // After "--": the command baton runs, and its files.
  lines.push(`complete -c baton -n 'contains -- -- (commandline -opc)' -F`);
  return `${lines.join('\n')}\n`;
}
