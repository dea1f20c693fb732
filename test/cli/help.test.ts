/**
 * Help that teaches: the top-level help groups the commands and lists the exit codes and the
 * environment variables; every command's --help ends with examples; descriptions are sentences
 * that commander wraps (no line breaks written into the source); the README lists every exit
 * code baton has; `baton completion` prints scripts a shell accepts and that complete.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { Command } from 'commander';
import { COMMANDS } from '../../src/cli/commands/index.js';
import { EXIT_CODES } from '../../src/cli/exit-codes.js';
import { ROOT, TempDir, cleanEnv, lines, runCli } from '../harness/cli.js';

const dir = new TempDir();
after(() => dir.remove());
const env = cleanEnv(dir.path);

function registered(): Command {
  const program = new Command('baton');
  for (const register of COMMANDS) register(program);
  return program;
}

describe('baton --help', () => {
  test('groups the commands (leadership, jobs, sidecar, AWS, tools), then exit codes and variables', async () => {
    const r = await runCli(['--help'], { env });
    assert.equal(r.code, 0, r.stderr);
    const headings = r.stdout.split('\n').filter((l) => /^[A-Z][A-Za-z ]+:$/.test(l));
    assert.deepEqual(headings.slice(0, 7), ['Options:', 'Leadership:', 'Jobs:', 'Sidecar:', 'AWS:', 'Tools:', 'Exit codes:']);
    assert.match(r.stdout, /Leadership:\n {2}run .*\n(.*\n)* {2}is-leader/);
    for (const [code] of EXIT_CODES) assert.match(r.stdout, new RegExp(`^ {2}${code.replace('+', '\\+')} +\\S`, 'm'), `exit code ${code} listed`);
    for (const v of ['BATON_STORE', 'BATON_LOCK', 'BATON_LEASE_DURATION', 'BATON_LOG_FORMAT', 'XDG_STATE_HOME']) assert.ok(r.stdout.includes(v), `${v} listed`);
  });

  test('every command (and aws subcommand) shows examples in its --help', async () => {
    const program = registered();
    const paths = program.commands.flatMap((c) => [[c.name()], ...c.commands.map((s) => [c.name(), s.name()])]);
    assert.ok(paths.length >= 12);
    for (const path of paths) {
      const r = await runCli([...path, '--help'], { env });
      assert.equal(r.code, 0, `${path.join(' ')}: ${r.stderr}`);
      assert.match(r.stdout, /\nExamples:\n {2}# .+\n {2}\$ .*\bbaton /, `${path.join(' ')} --help has examples`);
    }
  });

  test('descriptions are sentences (no line breaks in the source) and wrap to the width', async () => {
    const walk = (c: Command): Command[] => [c, ...c.commands.flatMap(walk)];
    for (const c of walk(registered()).slice(1)) assert.doesNotMatch(c.description(), /\n/, `${c.name()}'s description has a manual line break`);
    const r = await runCli(['once', '--help'], { env });
    const description = r.stdout.split('\n\n')[1]!.split('\n');
    assert.ok(description.length > 3);
    for (const l of description) assert.ok(l.length <= 80, `wrapped to 80 columns: "${l}"`);
  });

  test('`baton help COMMAND` shows that command\'s help; unknown topics and commands exit 64 with a suggestion', async () => {
    const ok = await runCli(['help', 'cron'], { env });
    assert.equal(ok.code, 0);
    assert.match(ok.stdout, /Usage: baton cron/);
    for (const args of [['help', 'sttus'], ['sttus']]) {
      const r = await runCli(args, { env });
      assert.equal(r.code, 64, args.join(' '));
      assert.deepEqual(lines(r.stderr), ["baton: unknown command 'sttus' (Did you mean status?)"]);
      assert.equal(r.stdout, '');
    }
  });
});

test('the README lists every exit code baton can produce, with the same codes as the CLI', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('<!-- exit-codes:');
  assert.ok(start > 0, 'README has the exit-code list');
  const table = readme.slice(start).split('\n\n')[0]!;
  const codes = [...table.matchAll(/^\| ([0-9+N]+|other) \|/gm)].map((m) => m[1]);
  assert.deepEqual(codes, EXIT_CODES.map(([c]) => c));
});

describe('baton completion', () => {
  test('an unknown shell is a usage error', async () => {
    const r = await runCli(['completion', 'tcsh'], { env });
    assert.equal(r.code, 64);
    assert.equal(lines(r.stderr).length, 1);
    assert.match(r.stderr, /tcsh/);
  });

  for (const shell of ['bash', 'zsh', 'fish']) {
    test(`${shell}: names every command and its flags`, async () => {
      const r = await runCli(['completion', shell], { env });
      assert.equal(r.code, 0, r.stderr);
      for (const c of registered().commands) assert.ok(r.stdout.includes(c.name()), `${shell} script names ${c.name()}`);
      for (const flag of ['lease-duration', 'at-most-for', 'schedule', 'log-format']) assert.ok(r.stdout.includes(flag), `${shell} script has --${flag}`);
    });
  }

  test('bash: the script parses, and completes commands and flags', async () => {
    const r = await runCli(['completion', 'bash'], { env });
    const script = dir.join('baton.bash');
    writeFileSync(script, r.stdout);
    const complete = (...words: string[]) => {
      const probe = `source '${script}'; COMP_WORDS=(baton ${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length}; _baton; printf '%s\\n' "\${COMPREPLY[@]}"`;
      const out = spawnSync('bash', ['-c', probe], { encoding: 'utf8' });
      assert.equal(out.status, 0, out.stderr);
      return out.stdout.split('\n').filter(Boolean);
    };
    assert.equal(spawnSync('bash', ['-n', script]).status, 0);
    assert.deepEqual(complete('st'), ['status']);
    assert.ok(complete('run', '--lea').includes('--lease-duration'));
    assert.deepEqual(complete('aws', 'dr'), ['drain']);
    assert.deepEqual(complete('run', '--', 'ls', '--lea'), [], 'after -- the words are the command\'s');
  });
});
