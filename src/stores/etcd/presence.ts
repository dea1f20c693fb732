import type { Presence } from '../../core/store.js';
import type { Candidate, CandidateRegistry } from './candidates.js';
import { leaseGone, type Rpc } from './client.js';
import { prefixEnd, type KeyLayout } from './keys.js';

/**
 * EtcdPresence keeps registry entries on the candidates' own leases (core/store.ts, Presence):
 * `<prefix>_baton/present/<lock>/<identity>` is put with the lease of that identity's candidate
 * key, in the very txn that queues the key (Election.campaignOnce asks `opsFor`), so it costs no
 * request of its own, and the server deletes it with the lease: when the candidate withdraws,
 * is revoked or dies. A leader's release leaves its lease to expire instead of revoking it
 * (Election's `keepsLease`), so the entry outlives the release until the next campaign, a retry
 * period later, puts it on the new lease: a leader that just handed over is still a candidate.
 */
export class EtcdPresence implements Presence {
  /** Announced values, by presence key. */
  private readonly values = new Map<string, Buffer>();

  constructor(
    private readonly rpc: Rpc,
    private readonly layout: KeyLayout,
    private readonly registry: CandidateRegistry,
    private readonly guard: () => void,
  ) {}

  /** announced: whether `c`'s identity has an entry here (its lease then carries it). */
  announced(c: Candidate): boolean {
    return this.values.has(this.layout.presenceKey(c.lock, c.identity));
  }

  /** opsFor is the put a campaign txn of `c` carries: its announced entry, on its lease. */
  opsFor(c: Candidate): { request_put: { key: Buffer; value: Buffer; lease: string } }[] {
    const key = this.layout.presenceKey(c.lock, c.identity);
    const value = this.values.get(key);
    return value ? [{ request_put: { key: Buffer.from(key), value, lease: c.leaseId } }] : [];
  }

  async announce(lock: string, identity: string, value: string): Promise<void> {
    this.guard();
    const key = this.layout.presenceKey(lock, identity);
    const v = Buffer.from(value);
    this.values.set(key, v);
    // Already in the line: written now, on its lease. Otherwise its next campaign writes it.
    const c = this.registry.get(lock, identity);
    if (!c || c.createRevision === '0') return;
    try {
      await this.rpc.call('announce', (o) => this.rpc.client.kv.put({ key: Buffer.from(key), value: v, lease: c.leaseId }, o));
    } catch (err) {
      // The lease just ended (a release, a withdrawal): the next campaign writes the entry.
      if (!leaseGone(err)) throw err;
    }
  }

  async withdraw(lock: string, identity: string): Promise<void> {
    this.guard();
    const key = this.layout.presenceKey(lock, identity);
    if (!this.values.delete(key)) return;
    await this.rpc.call('withdraw announcement', (o) => this.rpc.client.kv.deleteRange({ key: Buffer.from(key) }, o));
  }

  async list(lock: string): Promise<string[]> {
    this.guard();
    const start = Buffer.from(this.layout.presencePrefix(lock));
    const res = await this.rpc.call('list candidates', (o) => this.rpc.client.kv.range({ key: start, range_end: prefixEnd(start), sort_order: 'Ascend', sort_target: 'Key' }, o));
    // A lock whose name extends this one ("a" and "a/b") has entries under the prefix too.
    return res.kvs.filter((kv) => !kv.key.subarray(start.length).includes(0x2f)).map((kv) => kv.value.toString());
  }
}
