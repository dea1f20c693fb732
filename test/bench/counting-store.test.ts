/**
 * The bench's counting wrapper must behave like the store it wraps in everything the elector
 * reads, or the bench measures a different elector: until 2026-11-24 it dropped the feed's
 * getters, and every benched standby re-read once per lease + retry period as if its feed
 * reported no expiries.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { countingStore } from '../../bench/counting-store.js';
import { MemoryStore } from '../../src/stores/memory/index.js';
import type { LeaseStore } from '../../src/core/store.js';

describe('bench countingStore', () => {
  it('reads watchLive, watchSeesExpiry and watchSeesRenewals live from the wrapped store', async () => {
    const inner = new MemoryStore();
    let live = true;
    let seesExpiry = true;
    let seesRenewals = true;
    Object.defineProperty(inner, 'watchLive', { get: () => live });
    Object.defineProperty(inner, 'watchSeesExpiry', { get: () => seesExpiry });
    Object.defineProperty(inner, 'watchSeesRenewals', { get: () => seesRenewals });
    const { store } = countingStore(inner);
    assert.equal(store.watchLive, true);
    assert.equal(store.watchSeesExpiry, true);
    assert.equal(store.watchSeesRenewals, true);
    live = false;
    seesExpiry = false;
    seesRenewals = false;
    assert.equal(store.watchLive, false);
    assert.equal(store.watchSeesExpiry, false);
    assert.equal(store.watchSeesRenewals, false);
    await store.close();
  });

  it('offers every member the wrapped store offers', async () => {
    const inner = new MemoryStore();
    const { store } = countingStore(inner);
    const members = (s: LeaseStore) => {
      const names = new Set<string>();
      for (let o: object | null = s; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
        for (const n of Object.getOwnPropertyNames(o)) if (n !== 'constructor' && !n.startsWith('_')) names.add(n);
      }
      return names;
    };
    const wrapped = members(store);
    // Only the interface's members matter; a store's own helpers (backend, etc.) need not pass.
    const iface = ['kind', 'capabilities', 'read', 'write', 'renewMany', 'renewRevisions', 'watch', 'watchLive', 'watchSeesExpiry', 'watchSeesRenewals', 'list', 'ledger', 'queue', 'close'];
    for (const name of iface) {
      if ((inner as unknown as Record<string, unknown>)[name] !== undefined) assert.ok(wrapped.has(name), `countingStore drops ${name}`);
    }
    await store.close();
  });
});
