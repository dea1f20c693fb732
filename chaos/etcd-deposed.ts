/**
 * chaos/etcd-deposed.ts — `npm run chaos:etcd-deposed -- [--rounds N] [--line debian|current] [--log-dir DIR]`:
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
 *                   than its request, or although the new raft leader shows its lease was not
 *                   renewed (no more time left than a control lease granted with it) — baton's
 *                   bug; exit 1.
 * Beside baton's renewal, each round probes the server directly. Two 5 s probe leases are
 * granted before the freeze; a raw keepalive of the first is queued at the frozen leader with the
 * renewal; after the thaw the new raft leader is asked how long each has left. Both were extended
 * alike when it took office, so if the keepalive's "TTL > 0" was a real renewal the first has
 * more left than the second; if it has no more, the answer came from the resumed member's own
 * stale lease table. Its raft term then says whether the term rule alone could have told (`stale,
 * old term`) or not (`stale, NEW term`: the case KeepAliveStream.vouched exists for).
 *
 * Whether the race happens depends on timing and on the etcd release, so this is a report, run
 * with the long chaos runs, not a test gate; the rule itself is proven deterministically by
 * test/stores/etcd/deposed.test.ts. Exit 0 unless baton accepted a stale answer (1) or the
 * cluster could not be had (69).
 */
import { parseArgs } from 'node:util';
import { Etcd3 } from 'etcd3';
import { errorMessage } from '../src/core/errors.js';
import { EtcdStore } from '../src/stores/etcd/index.js';
import { KeepAliveStream, type KeepAliveAnswers } from '../src/stores/etcd/keepalive.js';
import { acquireWrite, keepWrite } from '../src/testing/conformance/context.js';
import { etcdCluster, etcdRaftLeader as raftLeader, type EtcdLine, type EtcdServer } from '../infra/servers/index.js';

type Outcome = 'reproduced' | 'not reproduced' | 'ACCEPTED STALE';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '8' },
    line: { type: 'string', default: 'debian' },
    'log-dir': { type: 'string' },
    'freeze-ms': { type: 'string', default: '2500' },
  },
});
const rounds = Number(values.rounds);
const line = values.line as EtcdLine;
const freezeMs = Number(values['freeze-ms']);
if (!Number.isInteger(rounds) || rounds < 1 || (line !== 'debian' && line !== 'current') || !(freezeMs >= 2000)) {
  process.stderr.write('usage: chaos/etcd-deposed.ts [--rounds N ≥ 1] [--line debian|current] [--log-dir DIR] [--freeze-ms MS ≥ 2000]\n');
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
  // With --log-dir each member's log is kept there (ETCD_LOG_LEVEL=debug shows etcd's own
  // leadership checks on lease renewals).
  ({ members } = await etcdCluster(3, { line, logDir: values['log-dir'] }));
} catch (err) {
  process.stderr.write(`etcd-deposed: the cluster did not start: ${errorMessage(err)}\n`);
  process.exit(69);
}
const outcomes: { round: number; outcome: Outcome; detail: string }[] = [];
type Probe = 'stale, old term' | 'stale, NEW term' | 'refused' | 'renewed at the new leader' | 'no answer' | 'unknown';
const probes: Probe[] = [];

/** probeKeepalive sends one raw keepalive of `id` to `client`'s member; resolves with its answer. */
async function probeKeepalive(client: Etcd3, id: string): Promise<{ ttl: number; term: number } | undefined> {
  try {
    const stream = await client.leaseClient.leaseKeepAlive();
    return await new Promise((resolve) => {
      const done = (v: { ttl: number; term: number } | undefined) => {
        try {
          stream.end();
          stream.cancel();
        } catch {
          // gone
        }
        resolve(v);
      };
      stream.on('data', (res) => done({ ttl: Number(res.TTL), term: Number(res.header?.raft_term ?? 0) }));
      stream.on('error', () => done(undefined));
      setTimeout(() => done(undefined), freezeMs + 5000);
      stream.write({ ID: id });
    });
  } catch {
    return undefined;
  }
}

/** timeLeft asks `member` (the new raft leader) how many seconds each lease has left (-1: gone). */
async function timeLeft(member: EtcdServer, ids: readonly string[]): Promise<number[]> {
  const client = new Etcd3({ hosts: member.endpoint });
  try {
    return await Promise.all(
      ids.map((ID) =>
        client.leaseClient.leaseTimeToLive({ ID }).then(
          (res) => Number(res.TTL),
          () => -1, // "requested lease not found"
        ),
      ),
    );
  } finally {
    client.close();
  }
}
try {
  for (let round = 0; round < rounds; round++) {
    const { member: leader, term: raftTermBefore } = await raftLeader(members);
    // One endpoint only, a call timeout longer than the freeze: the renewal waits at the member.
    const store = EtcdStore.fromUrl(`etcd://127.0.0.1:${leader.port}?timeout=6s`);
    const lock = `deposed-${round}`;
    const won = await store.queue!.campaign(lock, acquireWrite('a', 10_000));
    if (!won.ok) throw new Error(`round ${round}: the candidate did not lead an empty lock`);
    const raw = new Etcd3({ hosts: leader.endpoint });
    const [probeLease, controlLease, batonControl] = await Promise.all(
      [5, 5, 10].map(async (TTL) => String((await raw.leaseClient.leaseGrant({ TTL })).ID)),
    );
    const batonLease = String(won.record.metadata.etcdLease);
    leader.pause();
    await sleep(1500); // past the election timeout (1 s): the others elect a new raft leader
    const probe = probeKeepalive(raw, probeLease);
    const from = seen.length;
    const renewal = store.write(lock, won.record.revision, { ...keepWrite('a', 10_000), acquiredAt: won.record.acquiredAt }).then(
      (r) => ({ ok: r.ok, detail: `renewed: ${r.ok}` }),
      (err: Error) => ({ ok: false, detail: `failed: ${err.message}` }),
    );
    await sleep(freezeMs - 1500);
    leader.resume();
    const r = await renewal;
    const answer = await probe;
    const { member: newLeader, term: raftTermAfter } = await raftLeader(members);
    const [left, control, batonLeft, batonControlLeft] = await timeLeft(newLeader, [probeLease!, controlLease!, batonLease, batonControl!]);
    // Ground truth for baton's renewal too: its 10 s lease against a 10 s control granted with it.
    const batonStale = r.ok && !(batonLeft! > batonControlLeft!);
    const probed: Probe = !answer
      ? 'no answer'
      : answer.ttl <= 0
        ? 'refused'
        : left! > control!
          ? 'renewed at the new leader'
          : left! < 0 || control! < 0
            ? 'unknown'
            : answer.term <= raftTermBefore
              ? 'stale, old term'
              : 'stale, NEW term';
    probes.push(probed);
    raw.close();
    // The renewal was sent during the freeze, after the others' election: an answer at the
    // frozen leader's term (or older) came from its stale lease table.
    const fromDeposed = raftTermAfter > raftTermBefore && seen.slice(from).some((a) => a.term <= raftTermBefore);
    const outcome: Outcome = /deposed leader/.test(r.detail) ? 'reproduced' : r.ok && (fromDeposed || batonStale) ? 'ACCEPTED STALE' : 'not reproduced';
    const detail = `${r.detail}${r.ok ? ` (its lease has ${batonLeft} s left at the new leader, control ${batonControlLeft} s)` : ''} (raft term ${raftTermBefore} → ${raftTermAfter}); probe keepalive: ${probed}${answer ? ` (TTL ${answer.ttl}, term ${answer.term}; left at the new leader ${left} s, control ${control} s)` : ''}`;
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
const tally = new Map<Probe, number>();
for (const p of probes) tally.set(p, (tally.get(p) ?? 0) + 1);
process.stdout.write(`probe keepalives (freeze ${freezeMs} ms): ${[...tally].map(([p, n]) => `${p} ${n}`).join(', ')}\n`);
process.exit(count('ACCEPTED STALE') > 0 ? 1 : 0);
