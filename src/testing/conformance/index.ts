import { recordTests } from './records.js';
import { notifyTests } from './notify.js';
import { electionTests } from './elections.js';
import { ledgerTests } from './ledger.js';
import type { ConformanceOptions } from './context.js';

export type { ConformanceOptions } from './context.js';

/**
 * storeConformanceSuite registers, with node:test, the tests every baton store must pass:
 * create-if-absent, compare-and-set, release, batch renewal, listing, notification, expiry,
 * the durable ledger, fencing monotonicity across release/delete/reopen (and restart, given `restart`), and a
 * concurrency fuzz test. A store's test file is one call plus the server it starts:
 *
 *   storeConformanceSuite({ name: 'sqlite', makeStore: async () => new SqliteStore(path) });
 */
export async function storeConformanceSuite(options: ConformanceOptions): Promise<void> {
  const probe = await options.makeStore();
  const declared = probe.capabilities;
  await probe.close();
  const caps = { ...declared, ...options.capabilities };
  recordTests(options, caps);
  if (caps.notify) notifyTests(options);
  if (caps.ledger) ledgerTests(options);
  electionTests(options, caps);
}
