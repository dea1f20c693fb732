import type { LeaseWrite, RenewRequest, WriteResult } from '../../core/store.js';
import type { Entry, EntryRegistry } from './entries.js';
import { encodeWrite, parseRevision, writtenRecord } from './layout.js';
import { fixVersion } from './sdk.js';
import { isZkError, type ZkSession } from './session.js';

/**
 * RENEW_CHUNK is how many renewals go in one multi: 2 ops each, about 100 KB of request at most,
 * far below the server's 1 MB jute.maxbuffer.
 */
export const RENEW_CHUNK = 256;

/** Own is a renewal of a leader this handle holds: its entry, and the record version it expects. */
interface Own {
  readonly index: number;
  readonly entry: Entry;
  readonly version: number;
  readonly next: LeaseWrite;
}

/**
 * renewBatch renews this handle's leaders many to a multi: for each, the same two ops as a
 * single renewal (check the latch node exists, set the record on the version it expects), so the
 * server does one transaction and one answer per chunk instead of one per lease. A multi is all
 * or none, so every lease in a chunk is renewed exactly as alone or not at all; when one of them
 * lost its race the chunk is sent again lease by lease (`single`) and each gets its own answer.
 * Chunks go on the leader's own session (the renewal is what its deadline counts from). Anything
 * that is not a plain renewal of a leader held here goes through `single` as before.
 */
export async function renewBatch(entries: EntryRegistry, requests: readonly RenewRequest[], single: (r: RenewRequest) => Promise<WriteResult>): Promise<WriteResult[]> {
  const out: Promise<WriteResult>[] = new Array(requests.length);
  const bySession = new Map<ZkSession, Own[]>();
  requests.forEach((r, index) => {
    const rev = r.next.newTerm ? undefined : parseRevision(r.expected);
    const entry = rev && entries.withCzxid(r.lock, rev.czxid);
    if (!rev || !entry || entry.state !== 'leading' || r.next.holder !== entry.identity) {
      out[index] = single(r);
      return;
    }
    let list = bySession.get(entry.session);
    if (!list) bySession.set(entry.session, (list = []));
    list.push({ index, entry, version: rev.version, next: r.next });
  });
  for (const [session, own] of bySession) {
    for (let i = 0; i < own.length; i += RENEW_CHUNK) {
      const chunk = own.slice(i, i + RENEW_CHUNK);
      const done = renewChunk(session, chunk, (o) => single(requests[o.index]!));
      chunk.forEach((o, k) => (out[o.index] = done.then((results) => results[k]!)));
    }
  }
  return Promise.all(out);
}

async function renewChunk(session: ZkSession, chunk: readonly Own[], single: (o: Own) => Promise<WriteResult>): Promise<WriteResult[]> {
  let results: { stat?: { version: number } }[];
  try {
    results = await session.call<{ stat?: { version: number } }[]>(`renew ${chunk.length} leases`, (c, done) => {
      let tx = c.transaction();
      for (const o of chunk) tx = fixVersion(tx.check(o.entry.path, -1).setData(o.entry.recordPath, encodeWrite(o.next, o.entry.czxid), o.version), o.version);
      tx.commit((err, res) => done(err, res));
    });
  } catch (err) {
    // A ZooKeeper error code: one of them lost its race (or its node is gone). Lease by lease.
    if (isZkError(err)) return Promise.all(chunk.map(single));
    throw err;
  }
  return chunk.map((o, k) => {
    const version = results[2 * k + 1]?.stat?.version;
    if (version === undefined) throw new Error(`zookeeper: renew "${o.entry.lock}": the multi answered without the record's new version`);
    o.entry.recordVersion = version;
    return { ok: true, record: writtenRecord(o.entry.lock, o.next, o.entry.czxid, version) };
  });
}
