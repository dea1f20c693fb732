/**
 * etcdDeposedSuite: the rule "a keepalive answered at a raft term below that of a linearizable
 * request sent with it does not count", made to happen on purpose instead of waited for.
 *
 * In a cluster the case arises when a raft leader that was paused past an election resumes and
 * answers the keepalives queued at it from its own stale lease table (etcd-io/etcd#15247; see
 * staleKeepalive in src/stores/etcd/keepalive.ts). Whether a live three-member cluster does that
 * in a given run depends on timing and on the etcd release (chaos/etcd-deposed.ts reproduces it
 * and reports what the server did). Here a real single-member etcd of the given line answers
 * every request, and the answers to the leader's keepalives are handed to the store with the raft
 * term lowered by one — exactly what the store sees from a deposed member — at the one place the
 * store reads them (KeepAliveStream.batch). Each path that counts a keepalive as a lease refresh
 * (a renewal, a batch renewal, a claim with no write) must then refuse, and must accept the same
 * answers with their true term: remove a staleKeepalive check and its test fails. On a line whose
 * answers carried no raft term nothing would be lowered, and `refused` fails on that too.
 */
import assert from 'node:assert/strict';
import { after, afterEach, describe, it } from 'node:test';
import { StoreUnavailableError } from '../../../../src/core/errors.js';
import type { LeaseRecord, LeaseStore, LeaseWrite } from '../../../../src/core/store.js';
import { EtcdStore } from '../../../../src/stores/etcd/index.js';
import { KeepAliveStream, type KeepAliveAnswers, type KeepAliveRoute } from '../../../../src/stores/etcd/keepalive.js';
import { Rpc } from '../../../../src/stores/etcd/client.js';
import { acquireWrite, keepWrite } from '../../../../src/testing/conformance/context.js';
import { EtcdServer, type EtcdLine } from '../../../../infra/servers/index.js';

// Set by etcdDeposedSuite before any test runs (each test file is its own process).
let server: EtcdServer;

const stores: LeaseStore[] = [];

/** While set, every keepalive batch comes back as a deposed raft leader would answer it. */
let deposed = false;
let doctored = 0;
const genuineBatch = KeepAliveStream.prototype.batch;
KeepAliveStream.prototype.batch = async function (this: KeepAliveStream, ids: readonly string[], route?: KeepAliveRoute): Promise<KeepAliveAnswers> {
  if (route) sentWhileVouching.push(vouchingInFlight);
  const answers = await genuineBatch.call(this, ids, route);
  if (!deposed || !Number.isFinite(answers.term)) return answers;
  doctored++;
  // Its TTLs still say "alive": only the term gives the answer away.
  return { ttls: answers.ttls, term: answers.term - 1 };
};

/**
 * The vouching requests (a renewal's txns, a claim's or a campaign's read) in flight, and, for
 * each keepalive batch sent for a refresh, how many were in flight when it was sent.
 */
let vouchingInFlight = 0;
const sentWhileVouching: number[] = [];
const genuineCall = Rpc.prototype.call;
Rpc.prototype.call = function <T>(this: Rpc, what: string, fn: Parameters<Rpc['call']>[1]): Promise<T> {
  if (!/^(renew|claim |campaign )/.test(what)) return genuineCall.call(this, what, fn) as Promise<T>;
  vouchingInFlight++;
  return (genuineCall.call(this, what, fn) as Promise<T>).finally(() => vouchingInFlight--);
} as Rpc['call'];

function handle(): LeaseStore {
  const s = EtcdStore.fromUrl(server.url);
  stores.push(s);
  return s;
}

let n = 0;
const uniqueLock = () => `deposed-${process.pid}-${n++}`;
const renewal = (r: LeaseRecord, holder: string): LeaseWrite => ({ ...keepWrite(holder, 5_000), acquiredAt: r.acquiredAt });

async function lead(store: LeaseStore, lock: string, holder: string): Promise<LeaseRecord> {
  const won = await store.queue!.campaign(lock, acquireWrite(holder, 5_000));
  assert.ok(won.ok, `${holder} leads the empty lock ${lock}`);
  return won.record;
}

/** refused runs `fn` with deposed answers and checks it failed for that reason and no other. */
async function refused(fn: () => Promise<unknown>): Promise<void> {
  const before = doctored;
  deposed = true;
  try {
    await assert.rejects(fn, (err: unknown) => err instanceof StoreUnavailableError && /deposed leader/.test(err.message));
  } finally {
    deposed = false;
  }
  assert.ok(doctored > before, 'the path under test sent a keepalive');
}

export async function etcdDeposedSuite(line: EtcdLine): Promise<void> {
  server = await new EtcdServer(undefined, { line }).start();
  after(() => server.stop());
  after(() => {
    KeepAliveStream.prototype.batch = genuineBatch;
    Rpc.prototype.call = genuineCall;
  });
  afterEach(async () => {
    deposed = false;
    await Promise.all(stores.splice(0).map((s) => s.close()));
  });

  describe(`etcd (${line}): a keepalive answered at an older raft term is not a renewal`, () => {
    it('a leader renewal (write) is refused, then accepted with the true answers', async () => {
      const store = handle();
      const lock = uniqueLock();
      const won = await lead(store, lock, 'a');
      await refused(() => store.write(lock, won.revision, renewal(won, 'a')));
      const ok = await store.write(lock, won.revision, renewal(won, 'a'));
      assert.ok(ok.ok, 'the same renewal with the answers as the server gave them');
    });

    it('a batch renewal (renewMany) is refused as a whole, then accepted', async () => {
      const store = handle();
      const locks = [uniqueLock(), uniqueLock()];
      const records = await Promise.all(locks.map((lock) => lead(store, lock, 'a')));
      const requests = locks.map((lock, i) => ({ lock, expected: records[i]!.revision, next: renewal(records[i]!, 'a') }));
      await refused(() => store.renewMany!(requests));
      const results = await store.renewMany!(requests);
      assert.deepEqual(results.map((r) => r.ok), [true, true]);
    });

    it('a claim with no write by the next in line is refused, then made', async () => {
      const [ha, hb] = [handle(), handle()];
      const lock = uniqueLock();
      const first = await lead(ha, lock, 'a');
      const queued = await hb.queue!.campaign(lock, acquireWrite('b', 5_000));
      assert.equal(queued.ok, false, 'b waits behind a');
      const released = await ha.write(lock, first.revision, { ...keepWrite(null, 5_000), acquiredAt: first.acquiredAt });
      assert.ok(released.ok, 'a releases');
      // b is at the front now: its campaign claims its queued key, vouching for its lease with a
      // keepalive and a read sent together.
      await refused(() => hb.queue!.campaign(lock, acquireWrite('b', 5_000), { claimWithinMs: 0 }));
      const claimed = await hb.queue!.campaign(lock, acquireWrite('b', 5_000), { claimWithinMs: 0 });
      assert.ok(claimed.ok, 'b leads once the answers carry the true term');
      assert.ok(Number(claimed.record.term) > Number(first.term), 'with a higher term');
    });

    // The second form of the rule (KeepAliveStream.vouched): a keepalive that counts is sent only
    // once the linearizable request vouching for it has been answered — a deposed leader may
    // stamp a stale answer with the new term, so the terms alone cannot tell.
    it('every counted keepalive is sent after its vouching request was answered, never beside it', async () => {
      const [ha, hb] = [handle(), handle()];
      const lock = uniqueLock();
      sentWhileVouching.length = 0;
      const first = await lead(ha, lock, 'a');
      const renewed = await ha.write(lock, first.revision, renewal(first, 'a'));
      assert.ok(renewed.ok, 'a renews');
      const more = [uniqueLock(), uniqueLock()];
      const records = await Promise.all(more.map((l) => lead(ha, l, 'a')));
      const many = await ha.renewMany!(more.map((l, i) => ({ lock: l, expected: records[i]!.revision, next: renewal(records[i]!, 'a') })));
      assert.deepEqual(many.map((r) => r.ok), [true, true]);
      // b queues, then claims after a's release (a read of its key, then a keepalive).
      assert.equal((await hb.queue!.campaign(lock, acquireWrite('b', 5_000))).ok, false);
      const released = await ha.write(lock, renewed.record.revision, { ...keepWrite(null, 5_000), acquiredAt: first.acquiredAt });
      assert.ok(released.ok);
      const claimed = await hb.queue!.campaign(lock, acquireWrite('b', 5_000), { claimWithinMs: 0 });
      assert.ok(claimed.ok, 'b claims');
      // A renewal, a batch renewal and a claim: three refreshes.
      assert.ok(sentWhileVouching.length >= 3, `refreshes seen: ${sentWhileVouching.length}`);
      assert.deepEqual(
        sentWhileVouching.filter((n) => n > 0),
        [],
        'a keepalive was sent while the request vouching for it was still in flight',
      );
    });
  });
}
