/**
 * Validation at the edge: every rule of resolveTiming, validateLockName and validateIdentity
 * throws a typed InvalidConfigError (exit 78) whose message names the bad value, and the
 * LeaderElector constructor applies them all before it touches the store.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LeaderElector } from '../../src/core/elector.js';
import { InvalidConfigError } from '../../src/core/errors.js';
import { ExitCode, exitCodeFor } from '../../src/cli/exit-codes.js';
import { parseDuration } from '../../src/core/duration.js';
import { DEFAULT_TIMING, MAX_DURATION_MS, resolveTiming, validateIdentity, validateLockName, type Timing } from '../../src/core/options.js';
import { MemoryStore } from '../../src/stores/memory/index.js';

/** rejects asserts that `fn` throws an InvalidConfigError (exit 78) whose message matches every pattern. */
function rejects(fn: () => unknown, ...patterns: RegExp[]): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof InvalidConfigError, `expected InvalidConfigError, got ${String(err)}`);
    assert.equal(exitCodeFor(err), ExitCode.config);
    assert.equal(err.name, 'InvalidConfigError');
    assert.doesNotMatch(err.message, /\n/);
    for (const p of patterns) assert.match(err.message, p);
    return true;
  });
}

describe('resolveTiming', () => {
  test('defaults are client-go\'s and are returned as a fresh object', () => {
    const t = resolveTiming();
    assert.deepEqual(t, { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, jitterFactor: 1.2 });
    t.leaseDurationMs = 1;
    assert.equal(DEFAULT_TIMING.leaseDurationMs, 15_000);
    assert.ok(Object.isFrozen(DEFAULT_TIMING));
  });

  test('undefined fields take their defaults', () => {
    assert.deepEqual(resolveTiming({ leaseDurationMs: undefined, retryPeriodMs: 1000 }), { ...DEFAULT_TIMING, retryPeriodMs: 1000 });
  });

  const durations: [keyof Timing, string][] = [
    ['leaseDurationMs', 'leaseDuration'],
    ['renewDeadlineMs', 'renewDeadline'],
    ['retryPeriodMs', 'retryPeriod'],
  ];
  for (const [key, name] of durations) {
    for (const bad of [0, -1, -0.5, Number.NaN, Number.POSITIVE_INFINITY, '15s', null] as unknown[]) {
      test(`${name} = ${String(bad)} is not a positive duration (the message names the key as given: ${key})`, () => {
        const expected = typeof bad === 'number' ? `must be a positive number of milliseconds, got ${String(bad)}` : `must be a number of milliseconds, got ${bad === null ? 'null' : JSON.stringify(bad)}`;
        rejects(() => resolveTiming({ [key]: bad } as Partial<Timing>), new RegExp(`^${key}: ${expected}$`));
      });
    }
    test(`${name} over 24h is refused, 24h itself is a duration`, () => {
      rejects(() => resolveTiming({ [key]: MAX_DURATION_MS + 1 }), new RegExp(`^${key}: ${MAX_DURATION_MS + 1}ms is longer than the 24h limit$`));
      // 24h passes the per-duration check; a lease of 24h with the default others is valid.
      if (key === 'leaseDurationMs') assert.equal(resolveTiming({ leaseDurationMs: MAX_DURATION_MS }).leaseDurationMs, MAX_DURATION_MS);
    });
  }

  for (const bad of [-0.1, 10.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    test(`jitterFactor = ${bad} is refused`, () => {
      rejects(() => resolveTiming({ jitterFactor: bad }), new RegExp(`^jitterFactor: must be a number between 0 and 10, got ${bad}$`));
    });
  }
  test('jitterFactor 0 and 10 are the bounds, both allowed', () => {
    assert.equal(resolveTiming({ jitterFactor: 0 }).jitterFactor, 0);
    assert.equal(resolveTiming({ leaseDurationMs: 60_000, renewDeadlineMs: 30_000, retryPeriodMs: 2_000, jitterFactor: 10 }).jitterFactor, 10);
  });

  test('leaseDuration must be greater than renewDeadline (equal is refused)', () => {
    rejects(() => resolveTiming({ leaseDurationMs: 10_000, renewDeadlineMs: 10_000 }), /leaseDurationMs \(10000ms\)/, /renewDeadlineMs \(10000ms\)/);
    rejects(() => resolveTiming({ leaseDurationMs: 5_000 }), /leaseDurationMs \(5000ms\) must be greater than renewDeadlineMs \(10000ms\)/);
    assert.equal(resolveTiming({ leaseDurationMs: 10_001 }).leaseDurationMs, 10_001);
  });

  test('renewDeadline must be greater than retryPeriodMs × jitterFactor (equal is refused)', () => {
    rejects(() => resolveTiming({ renewDeadlineMs: 2_400 }), /renewDeadlineMs \(2400ms\) must be greater than retryPeriodMs × jitterFactor \(2000ms × 1\.2\)/);
    rejects(() => resolveTiming({ retryPeriodMs: 10_000, jitterFactor: 1, leaseDurationMs: 20_000 }), /renewDeadlineMs \(10000ms\)/, /10000ms × 1\)/);
    assert.equal(resolveTiming({ renewDeadlineMs: 2_401 }).renewDeadlineMs, 2_401);
  });
});

describe('validateLockName', () => {
  test('accepts 1–200 of [A-Za-z0-9._:/-] starting with a letter or digit', () => {
    for (const ok of ['a', '0', 'jobs/nightly-report', 'a.b_c:d/e-f', 'x'.repeat(200)]) assert.equal(validateLockName(ok), ok);
  });
  test('empty or not a string', () => {
    for (const bad of ['', undefined, null, 42]) rejects(() => validateLockName(bad), /^lock: a lock name is required and must not be empty$/);
  });
  test('201 characters', () => {
    rejects(() => validateLockName('x'.repeat(201)), /^lock: name is 201 characters; the limit is 200$/);
  });
  for (const bad of ['a b', '.hidden', '-x', '/abs', 'tab\there', 'café', 'a*b', 'quote"s']) {
    test(`refuses ${JSON.stringify(bad)}, naming it`, () => {
      rejects(() => validateLockName(bad), new RegExp(`^lock: ${JSON.stringify(bad).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} may contain only`));
    });
  }
  test('names the option it checks', () => {
    rejects(() => validateLockName('a b', '--lock'), /^--lock: "a b"/);
  });
});

describe('validateIdentity', () => {
  test('accepts 1–200 printable ASCII characters without spaces', () => {
    for (const ok of ['a', 'host-1234-abcdef', 'pod/ns@node:1', '~'.repeat(200)]) assert.equal(validateIdentity(ok), ok);
  });
  for (const bad of ['', 'a b', 'tab\t', 'é', 'i'.repeat(201), undefined, 7]) {
    test(`refuses ${JSON.stringify(bad)?.slice(0, 20)}, naming it`, () => {
      rejects(() => validateIdentity(bad), new RegExp(`^identity: ${(typeof bad === 'string' ? JSON.stringify(bad) : `"${String(bad)}"`).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} must be 1–200 printable characters without spaces$`));
    });
  }
});

test('messages stay on one line when the bad value holds a line break', () => {
  rejects(() => validateLockName('new\nline'), /new.*line/);
  rejects(() => validateIdentity('new\nline'), /new.*line/);
});

describe('parseDuration', () => {
  test('needs a unit and names the flag', () => {
    assert.equal(parseDuration('1.5s'), 1500);
    assert.equal(parseDuration(' 250ms '), 250);
    assert.equal(parseDuration('2m'), 120_000);
    for (const bad of ['15', 'banana', '-1s', '', '1e3ms', '5 parsecs']) {
      rejects(() => parseDuration(bad, '--x'), new RegExp(`^--x: "${bad.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}" is not a duration`));
    }
  });
});

describe('LeaderElector applies every rule when made', () => {
  const store = new MemoryStore();
  test('a bad lock, identity or timing throws InvalidConfigError before anything starts', () => {
    rejects(() => new LeaderElector({ store, lock: 'a b' }), /^lock: "a b"/);
    rejects(() => new LeaderElector({ store, lock: 'ok', identity: 'has space' }), /^identity: "has space"/);
    rejects(() => new LeaderElector({ store, lock: 'ok', leaseDurationMs: 1000, renewDeadlineMs: 1000 }), /leaseDurationMs \(1000ms\)/);
    rejects(() => new LeaderElector({ store, lock: 'ok', retryPeriodMs: -5 }), /^retryPeriodMs: must be a positive number of milliseconds, got -5$/);
  });
  test('timing holds the four timing fields only', () => {
    const e = new LeaderElector({ store, lock: 'ok', identity: 'me' });
    assert.deepEqual(Object.keys(e.timing).sort(), ['jitterFactor', 'leaseDurationMs', 'renewDeadlineMs', 'retryPeriodMs']);
  });
  test('a missing store is a TypeError', () => {
    assert.throws(() => new LeaderElector({ lock: 'ok' } as never), TypeError);
  });
  test('timing is resolved, frozen, and rounded up to the store\'s lease granularity', () => {
    const e = new LeaderElector({ store, lock: 'ok', identity: 'me', leaseDurationMs: 2_500, renewDeadlineMs: 2_000, retryPeriodMs: 500 });
    assert.equal(e.timing.leaseDurationMs, 2_500);
    assert.equal(e.timing.renewDeadlineMs, 2_000);
    assert.equal(e.timing.retryPeriodMs, 500);
    assert.equal(e.timing.jitterFactor, 1.2);
    assert.ok(Object.isFrozen(e.timing));
    const coarse = Object.assign(Object.create(store) as MemoryStore, { capabilities: { ...store.capabilities, leaseGranularityMs: 1000 } });
    const g = new LeaderElector({ store: coarse, lock: 'ok', identity: 'me', leaseDurationMs: 2_500, renewDeadlineMs: 2_000, retryPeriodMs: 500 });
    assert.equal(g.timing.leaseDurationMs, 3_000, 'a longer lease on the server only errs on the safe side');
    assert.equal(g.timing.renewDeadlineMs, 2_000);
  });
});
