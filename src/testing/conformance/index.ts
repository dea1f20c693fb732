import { recordTests } from './records.js';
import { notifyTests } from './notify.js';
import { electionTests } from './elections.js';
import { ledgerTests } from './ledger.js';
import { queueTests } from './queue.js';
import type { ConformanceOptions } from './context.js';

export type { ConformanceOptions } from './context.js';

/**
 * storeConformanceSuite registers, with node:test, the tests every baton store must pass:
 * create-if-absent, compare-and-set, release, batch renewal, listing (on a queue store: the
 * queue section, queue.ts, in their place), notification, expiry,
 * the durable ledger, fencing monotonicity across release/delete/reopen (and restart, given `restart`), and a
 * concurrency fuzz test. A store's test file is one call plus the server it starts:
 *
 *   storeConformanceSuite({ name: 'sqlite', makeStore: async () => new SqliteStore(path) });
 */
export async function storeConformanceSuite(options: ConformanceOptions): Promise<void> {
  const probe = await options.makeStore();
  // What a store can do is what it has (see core/store.ts): the suite follows its members.
  const has = { notify: !!probe.watch, batchRenew: !!probe.renewMany, list: !!probe.list, ledger: !!probe.ledger, queue: !!probe.queue };
  const caps = { ...has, ...probe.capabilities, ...options.capabilities };
  await probe.close();
  if (caps.queue) queueTests(options, caps);
  else recordTests(options, caps);
  if (caps.notify) notifyTests(options);
  if (caps.ledger) ledgerTests(options);
  electionTests(options, caps);
}
