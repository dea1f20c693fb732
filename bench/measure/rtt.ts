/**
 * store_rtt_ms — the physical floor: one renewal compare-and-set (`store.write` with the
 * current revision, no new term), timed in a loop on one store handle, after acquiring the
 * lock once with a create-if-absent write. Server requests per write are counted too, to show
 * what one "write" costs the server (etcd's renewal is a keepalive plus a read, sent together).
 */
import { randomBytes } from 'node:crypto';
import { openStore } from '../../src/stores/registry.js';
import type { LeaseWrite } from '../../src/core/store.js';
import { diffCounts, withSession } from '../counters.js';
import { summaryFields } from '../results.js';
import { round, summarize } from '../stats.js';
import type { BenchContext, StoreUnderTest } from '../plan.js';

const WARMUP = 50;
const COUNTED_WRITES = 100;

/** measureRtt adds one store_rtt_ms row for `s`. */
export async function measureRtt(ctx: BenchContext, s: StoreUnderTest): Promise<void> {
  const store = await openStore(s.store.url);
  const lock = `rtt-${randomBytes(4).toString('hex')}`;
  try {
    const base: LeaseWrite = {
      holder: 'bench-rtt',
      newTerm: true,
      leaseDurationMs: 15_000,
      acquiredAt: Date.now(),
      renewedAt: Date.now(),
      transitions: 1,
      stepDownRequested: false,
      metadata: {},
    };
    // A queue store (etcd, ZooKeeper) acquires by campaigning; its renewals are the same writes.
    const first = store.queue ? await store.queue.campaign(lock, base) : await store.write(lock, null, base);
    if (!first.ok) throw new Error(`bench: rtt: could not acquire ${lock} on ${s.kind.name}`);
    let record = first.record;
    const renew = async () => {
      const r = await store.write(lock, record.revision, { ...base, newTerm: false, renewedAt: Date.now() });
      if (!r.ok) throw new Error(`bench: rtt: a renewal of ${lock} on ${s.kind.name} lost its compare-and-set`);
      record = r.record;
    };
    for (let i = 0; i < WARMUP; i++) await renew();
    const samples: number[] = [];
    for (let i = 0; i < ctx.plan.rttWrites; i++) {
      const t0 = performance.now();
      await renew();
      samples.push(performance.now() - t0);
    }
    // What one write costs the server, counted apart from the timed loop (a Redis MONITOR
    // feed would slow the server down while it is timed).
    const delta = s.store.counter
      ? await withSession(s.store.counter, async (session) => {
          const before = await session.snapshot();
          for (let i = 0; i < COUNTED_WRITES; i++) await renew();
          return diffCounts(before, await session.snapshot());
        })
      : undefined;
    await store.write(lock, record.revision, { ...base, newTerm: false, holder: null });
    ctx.results.add({
      system: `baton-${s.kind.name}`,
      store: s.kind.name,
      metric: 'store_rtt_ms',
      unit: 'ms',
      ...summaryFields(summarize(samples)),
      method: 'store.write renewal (compare-and-set on the current revision), sequential, one handle, in-process timer',
      detail: delta ? { serverRequestsPerWrite: round(delta.total / COUNTED_WRITES, 2), byKind: perWrite(delta.byKind, COUNTED_WRITES) } : undefined,
    });
  } finally {
    await store.close();
  }
}

function perWrite(byKind: Record<string, number>, n: number): Record<string, number> {
  return Object.fromEntries(Object.entries(byKind).map(([k, v]) => [k, round(v / n, 2)]));
}
