/**
 * Bad input to `baton cron`, `baton once` and `baton lock`: one line on stderr naming what is
 * wrong, exit 64 for a command line that cannot be understood (missing flag or command), 78
 * for a value that cannot be used — and never a stack trace, never a command run.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, test } from 'node:test';
import { TempDir, cleanEnv, runCli } from '../harness/cli.js';

const dir = new TempDir();
after(() => dir.remove());
const marker = dir.join('ran');
const env = cleanEnv(dir.path, { BATON_STORE: dir.sqlite('bad.db') });
const RUN = ['--', 'sh', '-c', `touch '${marker}'`];

const cases: Array<[string, string[], number, RegExp]> = [
  ['invalid cron expression', ['cron', '--lock', 'c', '--schedule', 'every minute', ...RUN], 78, /^--schedule: "every minute" is not a valid cron expression/],
  ['out-of-range cron field', ['cron', '--lock', 'c', '--schedule', '0 25 * * *', ...RUN], 78, /^--schedule: "0 25 \* \* \*" is not a valid cron expression: .*hour/],
  ['unknown time zone', ['cron', '--lock', 'c', '--schedule', '* * * * *', '--tz', 'Mars/Olympus_Mons', ...RUN], 78, /^--tz: "Mars\/Olympus_Mons" is not a known time zone/],
  ['bad --missed', ['cron', '--lock', 'c', '--schedule', '* * * * *', '--missed', 'all', ...RUN], 78, /^--missed: "all" is not a policy; use skip or latest/],
  ['cron without --schedule', ['cron', '--lock', 'c', ...RUN], 64, /^cron: missing --schedule/],
  ['cron without --lock', ['cron', '--schedule', '* * * * *', ...RUN], 64, /^missing --lock NAME/],
  ['cron without a command', ['cron', '--lock', 'c', '--schedule', '* * * * *'], 64, /^cron: missing required argument 'command'/],
  ['cron with a bad lock name', ['cron', '--lock', 'no spaces', '--schedule', '* * * * *', ...RUN], 78, /^--lock: "no spaces" may contain only/],
  ['empty key', ['once', '--key', '', ...RUN], 78, /^--key: must not be empty/],
  ['key with a space', ['once', '--key', 'v 1', ...RUN], 78, /^--key: "v 1" may contain only/],
  ['once without --key', ['once', ...RUN], 64, /^once: missing --key KEY/],
  ['once without a command', ['once', '--key', 'v1'], 64, /^once: missing the command to run after "--"/],
  ['once with a bad --timeout', ['once', '--key', 'v1', '--timeout', 'soon', ...RUN], 78, /^--timeout: "soon" is not a duration/],
  ['once --status with --rerun', ['once', '--status', '--rerun', '--key', 'v1'], 64, /^once: --status and --rerun cannot be used together/],
  ['--at-least-for longer than --at-most-for', ['lock', '--lock', 'l', '--at-most-for', '1m', '--at-least-for', '2m', ...RUN], 78, /^--at-least-for \("2m"\) must not be longer than --at-most-for \("1m"\)/],
  ['lock without --at-most-for', ['lock', '--lock', 'l', ...RUN], 64, /^lock: missing --at-most-for DURATION/],
  ['--at-most-for without a unit', ['lock', '--lock', 'l', '--at-most-for', '30', ...RUN], 78, /^--at-most-for: "30" is not a duration; write a number with a unit/],
  ['--at-most-for too short to stop anything', ['lock', '--lock', 'l', '--at-most-for', '10ms', ...RUN], 78, /^--at-most-for: must be between 100ms and 24h/],
  ['--at-most-for echoes what was typed', ['lock', '--lock', 'l', '--at-most-for', '0.5ms', ...RUN], 78, /^--at-most-for: must be between 100ms and 24h, got "0\.5ms" \(the command must be stopped/],
  ['a 7-field cron expression (a year last)', ['cron', '--lock', 'c', '--schedule', '0 0 3 * * * 2027', ...RUN], 78, /^--schedule: "0 0 3 \* \* \* 2027" has 7 fields; baton cron takes 5 .* or 6/],
  ['once without a command suggests --key, not --lock', ['once', '--key', 'v1'], 64, /^once: missing the command to run after "--" \(e\.g\. baton once --key KEY -- /],
];

for (const [name, args, code, message] of cases) {
  test(`${name}: exit ${code}, one line`, async () => {
    const r = await runCli(args, { env });
    assert.equal(r.code, code, `exit code; stderr: ${r.stderr}`);
    const errLines = r.stderr.split('\n').filter((l) => l !== '');
    assert.equal(errLines.length, 1, `one line, got:\n${r.stderr}`);
    assert.match(errLines[0]!, new RegExp(`^baton: ${message.source.replace(/^\^/, '')}`));
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    assert.equal(r.stdout, '');
    assert.equal(existsSync(marker), false, 'the command must not run');
  });
}
