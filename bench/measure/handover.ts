/**
 * graceful_handover_ms — the leader releases (`elector.stop()`, which releases the lease) and
 * the standby's `elected` fires. In-process: every elector has its own store handle (its own
 * connections and subscription), and both ends are timed on this process's clock.
 *
 * Each round starts a fresh standby on another handle, waits until it has seen the leader and
 * then a random 50–100 ms (so its subscription is in place and releases do not land at a fixed
 * phase), stops the leader and times until the standby is elected. Default timing (15 s / 10 s
 * / 2 s): a handover that relied on expiry instead of the notification would show as ~15 s.
 *
 * Every handle also watches a lock nobody uses for the whole run, as a long-running process's
 * handle would be watching something: a store whose change feed is per handle (PostgreSQL's
 * LISTEN session) then has it in place, and the figure is the steady-state handover, not the
 * start-up of a feed (see the report for what a standby that starts during a handover sees).
 */
import { randomBytes } from 'node:crypto';
import { LeaderElector } from '../../src/core/elector.js';
import { openStore } from '../../src/stores/registry.js';
import type { LeaseStore } from '../../src/core/store.js';
import { randomBetween, sleep, waitFor } from '../clock.js';
import { summaryFields } from '../results.js';
import { round, summarize } from '../stats.js';
import type { BenchContext, StoreUnderTest } from '../plan.js';

const HANDLES = 3;
const TIMEOUT_MS = 40_000;

/** measureHandover adds one graceful_handover_ms row for `s`. */
export async function measureHandover(ctx: BenchContext, s: StoreUnderTest): Promise<void> {
  const handles: LeaseStore[] = [];
  for (let i = 0; i < HANDLES; i++) handles.push(await openStore(s.store.url));
  const lock = `handover-${randomBytes(4).toString('hex')}`;
  const unwatch = handles.map((h) => h.watch?.(`${lock}-warm`, () => {}));
  await sleep(500);
  const make = (i: number) => new LeaderElector({ store: handles[i % HANDLES]!, lock, identity: `h${i}` }).on('storeError', () => {});
  const samples: number[] = [];
  let slow = 0;
  let leader = make(0).start();
  try {
    await leader.elected();
    const rounds = s.kind.notifies ? ctx.plan.handovers : ctx.plan.pollingHandovers;
    for (let i = 1; i <= rounds; i++) {
      const standby = make(i).start();
      const holder = leader.identity;
      await waitFor('the standby to see the leader', () => (standby.leader()?.holder === holder ? true : undefined), TIMEOUT_MS);
      await sleep(randomBetween(50, 100));
      const elected = standby.elected();
      const t0 = performance.now();
      const stopped = leader.stop();
      const timeout = sleep(TIMEOUT_MS).then(() => 'timeout' as const);
      if ((await Promise.race([elected, timeout])) === 'timeout') throw new Error(`bench: handover ${i} on ${s.kind.name} took over ${TIMEOUT_MS}ms`);
      const ms = performance.now() - t0;
      samples.push(ms);
      if (ms > 1000) slow++;
      await stopped;
      leader = standby;
    }
  } finally {
    await leader.stop();
    for (const u of unwatch) u?.();
    await Promise.all(handles.map((h) => h.close()));
  }
  ctx.results.add({
    system: `baton-${s.kind.name}`,
    store: s.kind.name,
    metric: 'graceful_handover_ms',
    unit: 'ms',
    ...summaryFields(summarize(samples)),
    samples: samples.map((x) => round(x, 3)),
    settings: `default timing (lease 15 s, renew deadline 10 s, retry 2 s); release on stop()${s.kind.notifies ? '' : '; no change feed: the standby polls every jittered retry period'}`,
    method: `elector.stop() → standby's 'elected', in-process, ${HANDLES} store handles (one per elector, each with a standing watch); standby started 50–100 ms after it saw the leader`,
    detail: { over1s: slow },
  });
}
