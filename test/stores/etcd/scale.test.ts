/**
 * The etcd store with thousands of leases on one handle, against a real etcd 3.4: a large
 * `renewMany` renews every lease, goes out in chunks (never more than two chunks' keepalives
 * unanswered at once, each chunk's keys checked in txns of at most etcd's 128 operations), and
 * still refuses the renewals whose keys were deleted or rewritten meanwhile; thousands of lock
 * watches are created a bounded number at a time.
 *
 * The client is wrapped to count what goes over the wire; nothing here depends on timing, and the
 * bounds asserted are the store's own limits, not speeds.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Etcd3, IDuplexStream, ITxnRequest } from 'etcd3';
import type { LeaseRecord, LeaseWrite, RenewRequest } from '../../../src/core/store.js';
import { createClient } from '../../../src/stores/etcd/client.js';
import { parseEtcdUrl } from '../../../src/stores/etcd/config.js';
import { EtcdStore } from '../../../src/stores/etcd/index.js';
import { EtcdServer } from '../../../infra/servers/index.js';

const LEASES = 2500;
/** The store's own bounds (src/stores/etcd/chunks.ts, watch-hub.ts, etcd's --max-txn-ops). */
const CHUNK = 512;
const CHUNKS_IN_FLIGHT = 2;
const MAX_TXN_OPS = 128;
const MAX_UNCONFIRMED_WATCHES = 256;

const server = await new EtcdServer().start();
after(() => server.stop());

/** Wire counts the requests a wrapped client sends and the answers it gets. */
class Wire {
  keepaliveStreams = 0;
  keepalivesSent = 0;
  keepalivesUnanswered = 0;
  maxKeepalivesUnanswered = 0;
  checkTxns = 0;
  maxCompares = 0;
  watchCreates = 0;
  watchesUnconfirmed = 0;
  maxWatchesUnconfirmed = 0;

  /** reset starts counting afresh (streams stay open, so nothing is unanswered between steps). */
  reset(): void {
    this.keepalivesSent = 0;
    this.maxKeepalivesUnanswered = this.keepalivesUnanswered;
    this.checkTxns = 0;
    this.maxCompares = 0;
  }

  wrap(client: Etcd3): void {
    const lease = client.leaseClient;
    const keepAlive = lease.leaseKeepAlive.bind(lease);
    lease.leaseKeepAlive = async (...args: Parameters<typeof keepAlive>) => {
      const stream = await keepAlive(...args);
      this.keepaliveStreams++;
      this.tap(stream, () => {
        this.keepalivesSent++;
        this.keepalivesUnanswered++;
        this.maxKeepalivesUnanswered = Math.max(this.maxKeepalivesUnanswered, this.keepalivesUnanswered);
      }, () => this.keepalivesUnanswered--);
      return stream;
    };
    const kv = client.kv;
    const txn = kv.txn.bind(kv);
    kv.txn = (req: ITxnRequest, ...rest: unknown[]) => {
      if (req.compare?.length && !req.success?.length) {
        this.checkTxns++;
        this.maxCompares = Math.max(this.maxCompares, req.compare.length);
      }
      return (txn as (req: ITxnRequest, ...rest: unknown[]) => ReturnType<typeof txn>)(req, ...rest);
    };
    const watchClient = client.watchClient;
    const watch = watchClient.watch.bind(watchClient);
    watchClient.watch = async (...args: Parameters<typeof watch>) => {
      const stream = await watch(...args);
      this.tap(
        stream,
        (req: { create_request?: unknown }) => {
          if (!req.create_request) return;
          this.watchCreates++;
          this.watchesUnconfirmed++;
          this.maxWatchesUnconfirmed = Math.max(this.maxWatchesUnconfirmed, this.watchesUnconfirmed);
        },
        (res: { created?: boolean }) => {
          if (res.created) this.watchesUnconfirmed--;
        },
      );
      return stream;
    };
  }

  private tap<Req, Res>(stream: IDuplexStream<Req, Res>, onWrite: (req: Req) => void, onData: (res: Res) => void): void {
    type Write = (req: Req, ...rest: unknown[]) => unknown;
    const write = stream.write.bind(stream) as Write;
    (stream as unknown as { write: Write }).write = (req, ...rest) => {
      onWrite(req);
      return write(req, ...rest);
    };
    stream.on('data', onData);
  }
}

function acquisition(holder: string): LeaseWrite {
  const now = Date.now();
  return { holder, newTerm: true, leaseDurationMs: 30_000, acquiredAt: now, renewedAt: now, transitions: 1, stepDownRequested: false, metadata: { pid: 1 } };
}

function renewal(record: LeaseRecord): RenewRequest {
  return {
    lock: record.lock,
    expected: record.revision,
    next: {
      holder: record.holder,
      newTerm: false,
      leaseDurationMs: record.leaseDurationMs,
      acquiredAt: record.acquiredAt,
      renewedAt: Date.now(),
      transitions: record.transitions,
      stepDownRequested: record.stepDownRequested,
      metadata: record.metadata,
    },
  };
}

describe('etcd: thousands of leases on one handle', () => {
  const wire = new Wire();
  let client: Etcd3;
  let store: EtcdStore;
  let other: EtcdStore;
  const records: LeaseRecord[] = [];
  const unwatch: (() => void)[] = [];

  before(async () => {
    client = createClient(parseEtcdUrl(server.url).connection, 5000);
    wire.wrap(client);
    store = new EtcdStore({ client, callTimeoutMs: 5000 });
    other = EtcdStore.fromUrl(server.url);
    const run = `${process.pid}-${Date.now().toString(36)}`;
    for (let i = 0; i < LEASES; i += 250) {
      const part = await Promise.all(
        Array.from({ length: Math.min(250, LEASES - i) }, (_, k) => store.queue.campaign(`scale-${run}-${i + k}`, acquisition('scale'))),
      );
      for (const r of part) {
        assert.ok(r.ok, 'every lock is free, so every acquisition succeeds');
        records.push(r.record);
      }
    }
  });

  after(async () => {
    // The leases are left to expire with the server: only the handles are closed.
    for (const u of unwatch.splice(0)) u();
    await store?.close();
    await other?.close();
    client?.close();
  });

  it(`renewMany over ${LEASES} leases renews every one, in chunks`, async () => {
    wire.reset();
    const results = await store.renewMany(records.map(renewal));
    assert.equal(results.length, LEASES);
    results.forEach((r, i) => {
      assert.ok(r.ok, `renewal ${i} of ${records[i]!.lock} failed`);
      assert.equal(r.record.lock, records[i]!.lock, 'results come back in request order');
      assert.equal(r.record.revision, records[i]!.revision, 'a renewal is a keepalive: the revision (and term) stay');
      records[i] = r.record;
    });
    assert.equal(wire.keepalivesSent, LEASES, 'one keepalive per lease');
    assert.ok(
      wire.maxKeepalivesUnanswered <= CHUNK * CHUNKS_IN_FLIGHT,
      `at most ${CHUNKS_IN_FLIGHT} chunks of ${CHUNK} keepalives unanswered at once, saw ${wire.maxKeepalivesUnanswered}`,
    );
    assert.ok(wire.maxKeepalivesUnanswered > 0);
    assert.ok(wire.maxCompares <= MAX_TXN_OPS, `a txn checks at most ${MAX_TXN_OPS} keys, saw ${wire.maxCompares}`);
    assert.ok(wire.checkTxns >= Math.ceil(LEASES / MAX_TXN_OPS), `every key is checked, in ${wire.checkTxns} txns`);
    assert.ok(wire.keepaliveStreams >= 1 && wire.keepaliveStreams <= 4, `a few keepalive streams, not one per chunk: ${wire.keepaliveStreams}`);
  });

  it('a key deleted or rewritten by another handle is not renewed; the rest of its chunk is', async () => {
    // Another handle releases one lock (its key goes, its lease stays) and asks another leader
    // to step down (its key is rewritten); both sit in the middle of a chunk and of a txn.
    const released = 700;
    const flagged = 701;
    const rel = await other.write(records[released]!.lock, records[released]!.revision, { ...renewal(records[released]!).next, holder: null });
    assert.ok(rel.ok, 'the release by another handle succeeds');
    const flag = await other.write(records[flagged]!.lock, records[flagged]!.revision, { ...renewal(records[flagged]!).next, stepDownRequested: true });
    assert.ok(flag.ok, 'the step-down request by another handle succeeds');

    const results = await store.renewMany(records.map(renewal));
    results.forEach((r, i) => {
      if (i === released) {
        assert.equal(r.ok, false, 'a deleted key is not renewed, although its lease still lives');
      } else if (i === flagged) {
        assert.equal(r.ok, false, 'a rewritten key is not renewed as if unchanged');
        assert.equal(r.ok ? undefined : r.current?.stepDownRequested, true, 'the record as it now is comes back');
      } else {
        assert.ok(r.ok, `renewal ${i} failed`);
        records[i] = r.record;
      }
    });
    const current = await store.read(records[flagged]!.lock);
    assert.equal(current?.stepDownRequested, true);
    records[flagged] = current!;
    records.splice(released, 1);
  });

  it(`${LEASES} lock watches are created a bounded number at a time, and renewals go on`, async () => {
    for (const r of records) unwatch.push(store.watch(r.lock, () => {}));
    const until = Date.now() + 120_000;
    while (wire.watchCreates < records.length || wire.watchesUnconfirmed > 0) {
      assert.ok(Date.now() < until, `watches not all created: ${wire.watchCreates} sent, ${wire.watchesUnconfirmed} unconfirmed`);
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(
      wire.maxWatchesUnconfirmed <= MAX_UNCONFIRMED_WATCHES,
      `at most ${MAX_UNCONFIRMED_WATCHES} watch creates unconfirmed at once, saw ${wire.maxWatchesUnconfirmed}`,
    );
    wire.reset();
    const results = await store.renewMany(records.map(renewal));
    const failed = results.flatMap((r, i) => (r.ok ? [] : [records[i]!.lock]));
    assert.equal(failed.length, 0, `every lease still renews; not: ${failed.slice(0, 3).join(', ')}…`);
    assert.ok(wire.maxKeepalivesUnanswered <= CHUNK * CHUNKS_IN_FLIGHT);
  });
});
