/**
 * chaos/etcd-deposed.ts — `npm run chaos:etcd-deposed -- [--rounds N] [--line debian|current]`:
 * asks a live three-member etcd cluster whether a raft leader paused past an election answers,
 * on resuming, the lease keepalives queued at it from its stale lease table
 * (etcd-io/etcd#15247), and whether baton refused to count such an answer as a renewal.
 *
 * Each round: a store talks only to the raft leader, leads a lock, the leader is frozen (SIGSTOP)
 * past the election timeout, a renewal is queued at it, then it is thawed. The round reports what
 * happened:
 *   reproduced      the keepalive came back at the old term and baton refused the renewal;
 *   not reproduced  the server did not answer from a stale table (it failed the call, e.g.
 *                   "leader changed", or answered at the current term): nothing to refuse;
 *   ACCEPTED STALE  the renewal counted although its keepalive was answered at an older term
 *                   than its request — baton's bug; exit 1.
 * Whether the race happens depends on timing and on the etcd release, so this is a report, run
 * with the long chaos runs, not a test gate; the rule itself is proven deterministically by
 * test/stores/etcd/deposed.test.ts. Exit 0 unless baton accepted a stale answer (1) or the
 * cluster could not be had (69).
 */
import { parseArgs } from 'node:util';
import { errorMessage } from '../src/core/errors.js';
import { EtcdStore } from '../src/stores/etcd/index.js';
import { KeepAliveStream, type KeepAliveAnswers } from '../src/stores/etcd/keepalive.js';
import { acquireWrite, keepWrite } from '../src/testing/conformance/context.js';
import { etcdCluster, etcdRaftLeader as raftLeader, type EtcdLine, type EtcdServer } from '../infra/servers/index.js';

type Outcome = 'reproduced' | 'not reproduced' | 'ACCEPTED STALE';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '8' }, line: { type: 'string', default: 'debian' } } });
const rounds = Number(values.rounds);
const line = values.line as EtcdLine;
if (!Number.isInteger(rounds) || rounds < 1 || (line !== 'debian' && line !== 'current')) {
  process.stderr.write('usage: chaos/etcd-deposed.ts [--rounds N ≥ 1] [--line debian|current]\n');
  process.exit(64);
}

// Every keepalive batch's answers, as the server gave them, to tell what happened in a round.
const seen: KeepAliveAnswers[] = [];
const genuine = KeepAliveStream.prototype.batch;
KeepAliveStream.prototype.batch = async function (this: KeepAliveStream, ids: readonly string[]) {
  const answers = await genuine.call(this, ids);
  seen.push(answers);
  return answers;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let members: EtcdServer[] = [];
try {
  ({ members } = await etcdCluster(3, { line }));
} catch (err) {
  process.stderr.write(`etcd-deposed: the cluster did not start: ${errorMessage(err)}\n`);
  process.exit(69);
}
const outcomes: { round: number; outcome: Outcome; detail: string }[] = [];
try {
  for (let round = 0; round < rounds; round++) {
    const { member: leader, term: raftTermBefore } = await raftLeader(members);
    // One endpoint only, a call timeout longer than the freeze: the renewal waits at the member.
    const store = EtcdStore.fromUrl(`etcd://127.0.0.1:${leader.port}?timeout=6s`);
    const lock = `deposed-${round}`;
    const won = await store.queue!.campaign(lock, acquireWrite('a', 10_000));
    if (!won.ok) throw new Error(`round ${round}: the candidate did not lead an empty lock`);
    leader.pause();
    await sleep(1500); // past the election timeout (1 s): the others elect a new raft leader
    const from = seen.length;
    const renewal = store.write(lock, won.record.revision, { ...keepWrite('a', 10_000), acquiredAt: won.record.acquiredAt }).then(
      (r) => ({ ok: r.ok, detail: `renewed: ${r.ok}` }),
      (err: Error) => ({ ok: false, detail: `failed: ${err.message}` }),
    );
    await sleep(1000);
    leader.resume();
    const r = await renewal;
    const { term: raftTermAfter } = await raftLeader(members);
    // The renewal was sent during the freeze, after the others' election: an answer at the
    // frozen leader's term (or older) came from its stale lease table.
    const fromDeposed = raftTermAfter > raftTermBefore && seen.slice(from).some((a) => a.term <= raftTermBefore);
    const outcome: Outcome = /deposed leader/.test(r.detail) ? 'reproduced' : r.ok && fromDeposed ? 'ACCEPTED STALE' : 'not reproduced';
    const detail = `${r.detail} (raft term ${raftTermBefore} → ${raftTermAfter})`;
    outcomes.push({ round, outcome, detail });
    process.stdout.write(`round ${round}: ${outcome} — ${detail}\n`);
    await store.close();
    await sleep(1500);
  }
} finally {
  await Promise.all(members.map((m) => m.stop()));
}
const count = (o: Outcome) => outcomes.filter((x) => x.outcome === o).length;
process.stdout.write(`etcd ${line}: ${rounds} rounds — reproduced ${count('reproduced')}, not reproduced ${count('not reproduced')}, accepted stale ${count('ACCEPTED STALE')}\n`);
process.exit(count('ACCEPTED STALE') > 0 ? 1 : 0);
