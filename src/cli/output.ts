/**
 * What the CLI writes on stderr, and how: every line goes through `printable` (one line, control
 * characters escaped, over-long values shortened), as text (`baton: …`) or as a JSON object per
 * line (`--log-format json`). `--quiet` keeps warnings and errors and drops the rest.
 *
 * The settings are process-wide because a CLI process runs one command: main.ts sets them from
 * the command's flags before its action runs.
 */
import { scrubSecrets } from '../server/redact.js';

/** CliLogSettings: the format of stderr lines and whether informational lines are dropped. */
export interface CliLogSettings {
  format: 'human' | 'json';
  quiet: boolean;
}

const settings: CliLogSettings = { format: 'human', quiet: false };

/** configureOutput sets the stderr format and quietness (from --log-format and --quiet). */
export function configureOutput(next: Partial<CliLogSettings>): void {
  if (next.format === 'human' || next.format === 'json') settings.format = next.format;
  if (next.quiet !== undefined) settings.quiet = next.quiet;
}

/** outputSettings reads the current settings (commands that log through their own logger use them). */
export function outputSettings(): Readonly<CliLogSettings> {
  return settings;
}

/** Longest run of one value echoed in a message; longer ones keep their head and tail. */
const MAX_VALUE = 120;
/** Longest line baton prints about anything. */
const MAX_LINE = 600;

/**
 * printable makes `text` safe to print as one line: control characters (newlines included)
 * are shown escaped (`\n`, `\x1b`), any single value longer than 120 characters is shortened to
 * its head and tail with the count of what was left out, and the line stops at 600 characters.
 */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  let s = String(text).replace(/[\u0000-\u001f\u007f-\u009f]/g, escapeControl);
  s = s.replace(/[^\s"]{121,}|"[^"]{121,}"/g, shorten);
  return s.length > MAX_LINE ? `${s.slice(0, MAX_LINE - 1)}…` : s;
}

function escapeControl(c: string): string {
  const named: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
  return named[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
}

function shorten(value: string): string {
  if (value.length <= MAX_VALUE) return value;
  const head = value.slice(0, 70);
  const tail = value.slice(-30);
  return `${head}…[${value.length - 100} more characters]…${tail}`;
}

/** LineLevel: `info` (dropped by --quiet), `warn` and `error` (always printed). */
export type LineLevel = 'info' | 'warn' | 'error';

/** say writes one line on stderr in the configured format; `event` names it for JSON readers. */
export function say(level: LineLevel, message: string, event = level === 'error' ? 'error' : 'info', fields: Record<string, unknown> = {}): void {
  if (settings.quiet && level === 'info') return;
  const msg = printable(scrubSecrets(message));
  if (settings.format === 'json') {
    process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level, event, msg, ...fields })}\n`);
  } else {
    process.stderr.write(`baton: ${msg}\n`);
  }
}
