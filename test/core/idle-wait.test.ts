/**
 * How a standby waits on a store with server-side expiry (rule 5), on a fake clock: with a live
 * feed that reports the server's removals (`watchSeesExpiry`) it sets no timer and reads nothing;
 * without that promise it reads again once per lease + retry period; with its feed down it polls.
 * The store is the memory store behind a wrapper that claims server expiry, hears no renewals
 * (as on Redis and etcd) and counts reads; nothing here ever expires, so the leader stays and
 * only the standby's own looks are counted.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LeaderElector } from '../../src/core/elector.js';
import type { LeaseRecord, LeaseStore, LeaseWrite, StoreCapabilities, WatchListener, WriteResult } from '../../src/core/store.js';
import { MemoryStore } from '../../src/stores/memory/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';

const TIMING = { leaseDurationMs: 1000, renewDeadlineMs: 700, retryPeriodMs: 200, jitterFactor: 1.2 };

/** ExpiringView: a memory store seen as a server-expiry store whose feed can drop; counts reads. */
class ExpiringView implements LeaseStore {
  readonly kind = 'expiring-view';
  readonly capabilities: StoreCapabilities = { serverExpiry: true };
  watchLive = true;
  reads = 0;
  private readonly listeners = new Set<WatchListener>();
  constructor(
    private readonly inner: MemoryStore,
    readonly watchSeesExpiry: boolean,
  ) {}
  read(lock: string): Promise<LeaseRecord | null> {
    this.reads++;
    return this.inner.read(lock);
  }
  write(lock: string, expected: string | null, next: LeaseWrite): Promise<WriteResult> {
    return this.inner.write(lock, expected, next);
  }
  watch(lock: string, listener: WatchListener): () => void {
    this.listeners.add(listener);
    // As on Redis and etcd, renewals are not heard: only a new holder, a release or a removal.
    let holder: string | null | undefined;
    const off = this.inner.watch(lock, (r) => {
      if (!this.watchLive || (r && r.holder === holder)) return;
      holder = r?.holder;
      listener(r);
    });
    return () => {
      this.listeners.delete(listener);
      off();
    };
  }
  /** feedDown: the feed drops as a real store reports it (watchLive false, one wake-up). */
  feedDown(): void {
    this.watchLive = false;
    for (const l of this.listeners) l(undefined);
  }
  async close(): Promise<void> {}
}

async function standbyBehindLeader(watchSeesExpiry: boolean) {
  const clock = new FakeClock();
  const backend = new MemoryStore();
  const leader = new LeaderElector({ store: new MemoryStore(backend.backend), lock: 'idle', identity: 'a', clock, ...TIMING });
  const view = new ExpiringView(new MemoryStore(backend.backend), watchSeesExpiry);
  const standby = new LeaderElector({ store: view, lock: 'idle', identity: 'b', clock, ...TIMING });
  leader.start();
  await clock.advance(0);
  standby.start();
  await clock.advance(100);
  assert.equal(standby.leader()?.holder, 'a');
  const stop = async () => {
    const all = Promise.all([standby.stop(), leader.stop()]);
    for (let i = 0; i < 50; i++) await clock.advance(100);
    await all;
  };
  return { clock, view, standby, stop };
}

describe('a standby on a server-expiry store', () => {
  test('with a live feed that reports removals, it reads nothing over ten leases; with the feed down it polls', async () => {
    const { clock, view, stop } = await standbyBehindLeader(true);
    const first = view.reads;
    await clock.advance(TIMING.leaseDurationMs * 10);
    assert.equal(view.reads - first, 0, 'no read while the feed is live');
    view.feedDown();
    await clock.advance(5000);
    const maxGap = TIMING.retryPeriodMs * (1 + TIMING.jitterFactor);
    assert.ok(view.reads - first >= Math.floor(5000 / maxGap), `it polls while the feed is down (${view.reads - first} reads in 5 s)`);
    await stop();
  });

  test('without that promise it reads again once per lease + retry period', async () => {
    const { clock, view, stop } = await standbyBehindLeader(false);
    const first = view.reads;
    await clock.advance(TIMING.leaseDurationMs * 12);
    const looks = view.reads - first;
    const period = TIMING.leaseDurationMs + TIMING.retryPeriodMs;
    assert.ok(looks >= Math.floor((TIMING.leaseDurationMs * 12) / period) - 1 && looks <= Math.ceil((TIMING.leaseDurationMs * 12) / period), `${looks} reads in 12 leases`);
    await stop();
  });
});
