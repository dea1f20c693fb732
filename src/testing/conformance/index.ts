import { recordTests } from './records.js';
import { fencingTests } from './fencing.js';
import { notifyTests } from './notify.js';
import { electionTests } from './elections.js';
import { ledgerTests } from './ledger.js';
import { presenceTests } from './presence.js';
import { faultTests } from './faults.js';
import { lifecycleTests } from './lifecycle.js';
import { queueTests } from './queue.js';
import { renewRevisionsTests } from './renew-revisions.js';
import { handoverTests } from './handover.js';
import { rollingTests } from './rolling.js';
import type { ConformanceOptions } from './context.js';

export type { ConformanceOptions, StoreFaults } from './context.js';
export { recordTests, renewRevisionsTests, queueTests, fencingTests, notifyTests, electionTests, ledgerTests, presenceTests, faultTests, lifecycleTests, handoverTests, rollingTests };

/**
 * resolveCapabilities opens one handle to read what the store can do (what it has, and what it
 * declares), overridden by `options.capabilities`: the capabilities each part of the suite is given.
 */
export async function resolveCapabilities(options: ConformanceOptions) {
  const probe = await options.makeStore();
  // What a store can do is what it has (see core/store.ts): the suite follows its members.
  const has = { notify: !!probe.watch, batchRenew: !!probe.renewMany, renewRevisions: !!probe.renewRevisions, list: !!probe.list, ledger: !!probe.ledger, ledgerRemove: !!probe.ledger?.remove, presence: !!probe.presence, queue: !!probe.queue, directed: !probe.queue || !!probe.queue.requeue };
  const caps = { ...has, ...probe.capabilities, ...options.capabilities };
  await probe.close();
  return caps;
}

/**
 * storeConformanceSuite registers, with node:test, the tests every baton store must pass, in
 * this order (each part is exported too, for a store that wants to run some of them):
 * - recordTests: create-if-absent, compare-and-set, release, batch renewal, listing (on a queue
 *   store, queueTests in their place); renewRevisionsTests for a store with the renewal-only batch;
 * - fencingTests: terms strictly increase and are never reused — across release and reopening,
 *   and with `faults.deleteRecord` / `faults.restart` (or `kill` + `start`) across a deleted
 *   record and a restarted server;
 * - notifyTests (notify stores), ledgerTests (ledger stores), presenceTests (stores whose
 *   registry entries live on their candidates' leases or sessions);
 * - electionTests: expiry, handover, lifecycle events and a concurrency fuzz test, with real electors;
 * - handoverTests (stores with a ledger and directed handover: every compare-and-set store, and a
 *   queue store with `queue.requeue`): directed handover among registered candidates;
 * - rollingTests (the same stores): a rolling deploy of three moves leadership exactly once with `prefer: 'newest'`;
 * - lifecycleTests: `close()`, and with `faults.makeUnreachableStore` the unreachable store;
 * - faultTests: the scenarios whose hooks `faults` gives (kill/start, restart, freeze/thaw,
 *   cut connections, cut feed) with real electors on short leases.
 * A store's test file is one call plus the server it starts:
 *
 *   await storeConformanceSuite({ name: 'sqlite', makeStore: async () => new SqliteStore(path) });
 */
export async function storeConformanceSuite(options: ConformanceOptions): Promise<void> {
  const caps = await resolveCapabilities(options);
  if (caps.queue) queueTests(options, caps);
  else recordTests(options, caps);
  if (caps.renewRevisions) renewRevisionsTests(options);
  fencingTests(options);
  if (caps.notify) notifyTests(options);
  if (caps.ledger) ledgerTests(options, caps);
  if (caps.presence) presenceTests(options);
  electionTests(options, caps);
  if (caps.ledger && caps.directed) {
    handoverTests(options, caps);
    // The slowest part (six rolling deploys, ~20 s a store): BATON_CONFORMANCE_SKIP=rolling leaves
    // it out where it would only repeat itself (CI's other Node lines: the same stores, same rules).
    if (!(process.env.BATON_CONFORMANCE_SKIP ?? '').split(',').includes('rolling')) rollingTests(options);
  }
  lifecycleTests(options, caps);
  faultTests(options, caps);
}
