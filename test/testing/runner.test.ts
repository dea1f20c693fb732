/**
 * The public suite takes its test runner as a parameter (ConformanceOptions.test, keyv-style):
 * here a runner of a few lines, not node:test, collects the memory store's suite and runs the
 * ledger and presence-free registry parts itself. The suite registers nothing with node:test
 * when given a runner, and a part that fails under that runner is reported by it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ledgerTests, storeConformanceSuite, type TestContextLike, type TestFn, type TestRunner } from '../../src/testing/index.js';
import { MemoryStore } from '../../src/stores/memory/index.js';
import type { LeaseStore } from '../../src/core/store.js';

interface Suite {
  name: string;
  tests: { name: string; skip?: string | boolean; fn: TestFn }[];
  before: (() => unknown)[];
  after: (() => unknown)[];
}

/** miniRunner collects suites as a TestRunner, then runs them one test at a time. */
function miniRunner(): TestRunner & { suites: Suite[]; run(): Promise<{ passed: string[]; failed: string[]; skipped: string[] }> } {
  const suites: Suite[] = [];
  let current: Suite | undefined;
  const body = <F>(optionsOrFn: unknown, fn?: F): { options: { skip?: string | boolean }; fn: F } =>
    typeof optionsOrFn === 'function' ? { options: {}, fn: optionsOrFn as F } : { options: (optionsOrFn ?? {}) as { skip?: string | boolean }, fn: fn! };
  return {
    suites,
    describe(name, optionsOrFn, fn) {
      const s: Suite = { name, tests: [], before: [], after: [] };
      suites.push(s);
      current = s;
      body<() => void>(optionsOrFn, fn).fn();
      current = undefined;
    },
    it(name, optionsOrFn, fn) {
      const b = body<TestFn>(optionsOrFn, fn);
      current!.tests.push({ name, skip: b.options.skip, fn: b.fn });
    },
    before: (fn) => current!.before.push(fn),
    after: (fn) => current!.after.push(fn),
    afterEach: () => {},
    async run() {
      const passed: string[] = [];
      const failed: string[] = [];
      const skipped: string[] = [];
      for (const s of suites) {
        for (const f of s.before) await f();
        for (const t of s.tests) {
          if (t.skip) {
            skipped.push(t.name);
            continue;
          }
          let skippedInside = false;
          const ctx: TestContextLike = { skip: () => void (skippedInside = true), diagnostic: () => {} };
          try {
            await t.fn(ctx);
            (skippedInside ? skipped : passed).push(t.name);
          } catch {
            failed.push(t.name);
          }
        }
        for (const f of s.after) await f();
      }
      return { passed, failed, skipped };
    },
  };
}

test('the suite registers with the runner it is given: the ledger part runs under a runner that is not node:test', async () => {
  const runner = miniRunner();
  const backend = new MemoryStore().backend;
  ledgerTests({ name: 'memory', makeStore: async () => new MemoryStore(backend), test: runner }, { ledgerRemove: true });
  assert.deepEqual(runner.suites.map((s) => s.name), ['memory: ledger']);
  const r = await runner.run();
  assert.deepEqual(r.failed, []);
  assert.equal(r.passed.length, 6, `passed: ${r.passed.join('; ')}`);
});

test('a store that breaks the contract fails under the injected runner too', async () => {
  const runner = miniRunner();
  // A ledger whose remove ignores the version: the compare-and-delete part must fail.
  const backend = new MemoryStore().backend;
  const careless = async (): Promise<LeaseStore> => {
    const s = new MemoryStore(backend);
    const ledger = s.ledger;
    return Object.assign(Object.create(s) as LeaseStore, {
      ledger: {
        get: ledger.get.bind(ledger),
        put: ledger.put.bind(ledger),
        list: ledger.list.bind(ledger),
        remove: async (key: string) => {
          const e = await ledger.get(key);
          return e ? ledger.remove!(key, e.version) : false;
        },
      },
    });
  };
  ledgerTests({ name: 'careless', makeStore: careless, test: runner }, { ledgerRemove: true });
  const r = await runner.run();
  assert.ok(r.failed.some((n) => n.startsWith('remove deletes only at the current version')), `failed: ${r.failed.join('; ')}`);
});

test('the whole suite registers with the given runner, every part', async () => {
  const runner = miniRunner();
  const backend = new MemoryStore().backend;
  await storeConformanceSuite({ name: 'memory', makeStore: async () => new MemoryStore(backend), test: runner });
  const names = runner.suites.map((s) => s.name);
  // (The rolling part too, unless BATON_CONFORMANCE_SKIP=rolling leaves it out, as CI's other Node lines do.)
  const parts = ['create and compare-and-set', 'fencing', 'ledger', 'directed handover', 'lifecycle'];
  if (!(process.env.BATON_CONFORMANCE_SKIP ?? '').split(',').includes('rolling')) parts.push('rolling deploy');
  for (const part of parts) {
    assert.ok(names.some((n) => n.includes(part)), `${part} in ${names.join(', ')}`);
  }
});
