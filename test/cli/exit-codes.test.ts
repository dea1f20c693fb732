/**
 * The one map from error conditions to exit codes: each condition baton names gets its
 * sysexits code, subclasses follow their condition, and anything else is 70 (software).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CommanderError } from 'commander';
import { CliExit, ExitCode, exitCodeFor } from '../../src/cli/exit-codes.js';
import { BatonError, InvalidConfigError, LeaseLostError, StoreClosedError, StoreUnavailableError, UsageError } from '../../src/core/errors.js';
import { AwsRequestError, AwsUnavailableError } from '../../src/aws/errors.js';
import { ReconcileError } from '../../src/aws/reconcile.js';
import { StaleTermError } from '../../src/jobs/fencing.js';

test('each condition maps to its exit code', () => {
  const cases: [Error, number][] = [
    [new UsageError('u'), 64],
    [new InvalidConfigError('c'), 78],
    [new AwsRequestError('refused', 'AccessDenied'), 78],
    [new StoreUnavailableError('s'), 69],
    [new AwsUnavailableError('a'), 69],
    [new LeaseLostError('l'), 75],
    [new StaleTermError('r', 1), 75],
    [new ReconcileError('t'), 75],
    [new StoreClosedError(), 70],
    [new BatonError('b'), 70],
    [new Error('plain'), 70],
  ];
  for (const [err, code] of cases) assert.equal(exitCodeFor(err), code, `${err.name}: ${err.message}`);
  assert.equal(exitCodeFor('not an error'), ExitCode.software);
  assert.equal(exitCodeFor(new CommanderError(1, 'commander.unknownOption', 'x')), ExitCode.usage, 'a command line commander refused');
  assert.equal(exitCodeFor(new CliExit(3)), 3, 'a code a command decided on');
});

test('errors carry no exit code of their own', () => {
  for (const err of [new InvalidConfigError('c'), new StoreUnavailableError('s'), new LeaseLostError('l'), new StaleTermError('r', 1)]) {
    assert.equal('exitCode' in err, false, err.name);
  }
});
