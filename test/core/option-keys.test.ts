/**
 * The library refuses options it does not know, and values that are not numbers, naming the
 * key as the caller wrote it: a misspelt option silently ignored leaves a default in force.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { InvalidConfigError } from '../../src/core/errors.js';
import { LeaderElector } from '../../src/core/elector.js';
import { cronJob } from '../../src/jobs/cron.js';
import { runOnce } from '../../src/jobs/once.js';
import { withTaskLock } from '../../src/jobs/task-lock.js';
import { ShardGroup } from '../../src/shards/group.js';
import { MemoryStore } from '../../src/stores/memory/index.js';

const store = new MemoryStore();

function refuses(fn: () => unknown, ...patterns: RegExp[]): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof InvalidConfigError, `InvalidConfigError, got ${String(err)}`);
    for (const p of patterns) assert.match(err.message, p);
    assert.doesNotMatch(err.message, /\n/);
    return true;
  });
}

async function refusesAsync(fn: () => Promise<unknown>, ...patterns: RegExp[]): Promise<void> {
  await assert.rejects(fn, (err: unknown) => {
    assert.ok(err instanceof InvalidConfigError, `InvalidConfigError, got ${String(err)}`);
    for (const p of patterns) assert.match(err.message, p);
    return true;
  });
}

describe('unknown option keys are refused, naming the key used and the one meant', () => {
  test('LeaderElector: leaseDuration instead of leaseDurationMs', () => {
    refuses(() => new LeaderElector({ store, lock: 'l', leaseDuration: 5000 } as never), /^LeaderElector: unknown option "leaseDuration" \(did you mean "leaseDurationMs"\?\)/, /known options: .*renewDeadlineMs/);
  });
  test('LeaderElector: another case (retryperiodms)', () => {
    refuses(() => new LeaderElector({ store, lock: 'l', retryperiodms: 5 } as never), /unknown option "retryperiodms" \(did you mean "retryPeriodMs"\?\)/);
  });
  test('LeaderElector: a key with no near miss lists the known ones', () => {
    refuses(() => new LeaderElector({ store, lock: 'l', bogus: 1 } as never), /^LeaderElector: unknown option "bogus"; known options: store, lock, identity/);
  });
  test('runOnce', async () => {
    await refusesAsync(() => runOnce(store, 'k', { timeout: 5 } as never, () => {}), /^runOnce: unknown option "timeout" \(did you mean "timeoutMs"\?\)/);
  });
  test('cronJob', () => {
    refuses(() => cronJob(store, 'c', { schedule: '* * * * *', tz: 'UTC' } as never, () => {}), /^cronJob: unknown option "tz"/);
  });
  test('withTaskLock', async () => {
    await refusesAsync(() => withTaskLock(store, 't', { atMostFor: 1000 } as never, () => {}), /^withTaskLock: unknown option "atMostFor" \(did you mean "atMostForMs"\?\)/);
  });
  test('ShardGroup', () => {
    refuses(() => new ShardGroup({ store, group: 'g', shards: 4, leaseDuration: 1 } as never), /^ShardGroup: unknown option "leaseDuration" \(did you mean "leaseDurationMs"\?\)/);
  });
});

describe('values that are not numbers are refused, naming the key', () => {
  test('a duration given as text', () => {
    refuses(() => new LeaderElector({ store, lock: 'l', leaseDurationMs: '15s' } as never), /^leaseDurationMs: must be a number of milliseconds, got "15s"$/);
  });
  test('a jitter factor given as text', () => {
    refuses(() => new LeaderElector({ store, lock: 'l', jitterFactor: 'x' } as never), /^jitterFactor: must be a number between 0 and 10, got "x"$/);
  });
  test('runOnce timeoutMs given as text', async () => {
    await refusesAsync(() => runOnce(store, 'k2', { timeoutMs: '5s' } as never, () => {}), /^timeoutMs: must be a number of milliseconds \(0 or more\), got "5s"$/);
  });
  test('withTaskLock atMostForMs given as text', async () => {
    await refusesAsync(() => withTaskLock(store, 't', { atMostForMs: '1h' } as never, () => {}), /^atMostForMs: must be between \d+ms and 24h, got "1h"$/);
  });
});
