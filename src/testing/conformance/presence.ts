import assert from 'node:assert/strict';
import { LeaderElector } from '../../core/elector.js';
import { candidateKey, listCandidates } from '../../core/candidates.js';
import { Handles, uniqueLock, waitFor, type ConformanceOptions, runnerOf } from './context.js';
import { faultTiming } from './candidates.js';

/**
 * presenceTests (stores with `presence`) registers, with real electors: a candidate's registry
 * entry is the store's presence entry, with no ledger entry and no beat; it is gone when the
 * candidate stops, and when its store handle ends without a word (the session or lease that
 * carried it ends with the handle).
 */
export function presenceTests(o: ConformanceOptions): void {
  const { describe, it, after } = runnerOf(o);
  describe(`${o.name}: candidate registry by presence`, () => {
    const t = faultTiming(o.minLeaseMs);
    const handles = new Handles(o.makeStore);
    const electors: LeaderElector[] = [];
    after(async () => {
      await Promise.all(electors.map((e) => e.stop().catch(() => {})));
      await handles.closeAll();
    });
    const elector = (store: Awaited<ReturnType<typeof o.makeStore>>, lock: string, identity: string) => {
      const e = new LeaderElector({ store, lock, identity, ...t, candidate: { refreshMs: 200, appVersion: '1.2.3' } });
      e.on('storeError', () => {});
      electors.push(e);
      return e;
    };

    it('entries are the store’s, never beaten, and go with a stop or with the handle', async () => {
      const lock = uniqueLock('presence');
      const [sa, sb, sc, reader] = [await handles.get(), await handles.get(), await handles.get(), await handles.get()];
      const a = elector(sa, lock, 'ann').start();
      await a.elected();
      const b = elector(sb, lock, 'ben').start();
      const c = elector(sc, lock, 'cat').start();
      const names = async () => (await listCandidates(reader, lock)).map((x) => `${x.identity}${x.presence ? '' : '(ledger)'}`);
      await waitFor(async () => (await names()).length === 3, 10_000, 'three entries');
      assert.deepEqual(await names(), ['ann', 'ben', 'cat'], 'all three by presence');
      const first = await listCandidates(reader, lock);
      assert.equal(first.find((x) => x.identity === 'ben')?.appVersion, '1.2.3');
      // Ten refresh periods later: the same entries, not one beat, nothing in the ledger.
      await new Promise((r) => setTimeout(r, 2_000));
      const later = await listCandidates(reader, lock);
      assert.deepEqual(later.map((x) => x.beat), first.map((x) => x.beat), 'no beats');
      if (reader.ledger) for (const id of ['ann', 'ben', 'cat']) assert.equal(await reader.ledger.get(candidateKey(lock, id)), null, `no ledger entry for ${id}`);

      await c.stop();
      await waitFor(async () => !(await names()).includes('cat'), 5_000, 'cat gone once stopped');
      // ben's handle ends without its elector saying anything: its entry goes with it.
      await sb.close();
      await waitFor(async () => !(await names()).includes('ben'), t.leaseDurationMs * 4 + 10_000, 'ben gone with its handle');
      assert.deepEqual(await names(), ['ann']);
    });
  });
}
