import type { IDuplexStream, ILeaseKeepAliveRequest, ILeaseKeepAliveResponse } from 'etcd3';
import { StoreClosedError, StoreUnavailableError } from '../../core/errors.js';
import { CHUNK, inChunks } from './chunks.js';
import { leaseGone, unavailable, type Rpc } from './client.js';

type Stream = IDuplexStream<ILeaseKeepAliveRequest, ILeaseKeepAliveResponse>;

/** STREAMS is how many LeaseKeepAlive streams a handle may use side by side. */
const STREAMS = 4;

/**
 * Batch is one chunk of keepalive requests written together. Requests on a channel are numbered
 * in the order they are written; a batch owns the numbers `first … first + ttls.length - 1`.
 */
interface Batch {
  readonly first: number;
  /** Each lease's answer, by position in the batch. */
  readonly ttls: number[];
  /** Answers still missing; 0 once the batch is resolved. */
  owed: number;
  /** The lowest raft term among the answers so far (see KeepAliveAnswers.term). */
  term: number;
  readonly timer: NodeJS.Timeout;
  resolve(answers: KeepAliveAnswers): void;
  reject(err: Error): void;
}

/**
 * KeepAliveRoute is one LeaseKeepAlive stream, on one etcd member, and the answers it still owes
 * (opaque outside this file: `vouched` hands it to `batch` so both go to the same member).
 */
export interface KeepAliveRoute {
  /** The member this stream is open to: its own client, so a read can be sent to it too. */
  readonly member: Rpc;
  stream?: Stream;
  readonly opened: Promise<Stream>;
  /**
   * Lease ID → number of its oldest unanswered request. An array only while the same lease is
   * asked for more than once at a time (rare: two callers renewing it together), oldest first.
   * An entry goes away once answered, so the map is only as large as what is in flight.
   */
  readonly owed: Map<string, number | number[]>;
  /** Batches in request order; those before `head` are answered (compacted now and then). */
  readonly batches: Batch[];
  head: number;
  /** Number of the next request written. */
  next: number;
  dead: boolean;
}

/**
 * KeepAliveAnswers is one batch's answers: each lease's remaining TTL in seconds (0: gone), and
 * the lowest raft term in the answers' headers.
 */
export interface KeepAliveAnswers {
  ttls: number[];
  term: number;
}

/**
 * Vouched is a keepalive batch counted as a refresh (see `KeepAliveStream.vouched`): the answers,
 * what the vouching request returned, and `anchorMs`, the monotonic time (performance.now()) at
 * which that request was sent — the lease lives at least a TTL past it.
 */
export interface Vouched<R> {
  answers: KeepAliveAnswers;
  read: R;
  anchorMs: number;
}

/**
 * KeepAliveStream refreshes leases over a few long-lived LeaseKeepAlive streams: a batch writes
 * one request per lease and reads the answers, so many leases cost one round trip. A large
 * batch goes out in chunks (see chunks.ts), each with its own deadline from when it is sent.
 *
 * etcd answers a stream's requests one by one, in order; answers are matched to requests by
 * lease ID (oldest unanswered first), so the common case is a map lookup per answer, and order
 * would not matter. Per lease there is no timer, promise or closure: one per chunk.
 *
 * A chunk that gets no answer within the call deadline fails with StoreUnavailableError and its
 * stream is thrown away, failing every other chunk still waiting on it: a late answer must never
 * be taken for a later request's, because a renewal counts its lease from when *it* was sent.
 * Answers are only ever matched to requests written on the same stream.
 *
 * Each stream is opened to one member (`members`, taken in turn; with one, the handle's own
 * client), so that `vouched` can send its linearizable request to the very member that will
 * answer the keepalives.
 */
export class KeepAliveStream {
  /** Open channels, at most STREAMS. */
  private readonly channels: KeepAliveRoute[] = [];
  /** The member the next new stream is opened to (an index into `members`, from a random start, as etcd3 shuffles its hosts). */
  private nextMember = Math.floor(Math.random() * 1024);
  private closed = false;

  /**
   * `members`: one client per member of the cluster, each talking to that member only; empty
   * (the default) when the handle has one endpoint, or a client it was given, whose own routing
   * is then used for streams and requests alike.
   */
  constructor(
    private readonly rpc: Rpc,
    private readonly members: readonly Rpc[] = [],
  ) {}

  /**
   * keepAlive refreshes every lease; resolves with each one's remaining TTL in seconds (0: gone).
   * For waiting candidates only: what counts as a leader's refresh is `vouched`.
   */
  keepAlive(ids: readonly string[]): Promise<number[]> {
    if (this.closed) return Promise.reject(new StoreClosedError('etcd'));
    if (ids.length === 0) return Promise.resolve([]);
    return inChunks(ids, async (chunk) => (await this.send(chunk, this.current())).ttls);
  }

  /**
   * batch refreshes at most CHUNK leases in one batch, on `route` (one of this stream's, from
   * `vouched`) or the least busy stream, and resolves with the answers and their term.
   */
  batch(ids: readonly string[], route?: KeepAliveRoute): Promise<KeepAliveAnswers> {
    if (ids.length > CHUNK) return Promise.reject(new RangeError(`etcd: a keepalive batch of ${ids.length} leases is over ${CHUNK}`));
    return this.send(ids, route ?? this.current());
  }

  /**
   * vouched is the only keepalive that counts as a refresh of a leader's (or a claimant's) lease.
   * It sends `request` — linearizable: a txn or a read of the candidate's key — to the member a
   * stream is open to, waits for its answer, and only then sends the keepalives on that stream.
   * The lease then lives at least a TTL past the request's send (`anchorMs`), which is what the
   * caller counts from. Why, in a cluster where a raft leader can be paused past an election:
   *
   * - A member that was raft leader, was paused, and resumes still believes it leads until a
   *   message of the new term reaches it. In that window it answers keepalives from its own lease
   *   table, and etcd's own guard against it (`ensureLeadership`) is skipped when the member
   *   ticked within the last three ticks — which a resumed process does at once. The answer may
   *   even carry the new term, learned a moment later (seen with etcd 3.6.16: RELIABILITY,
   *   finding 4). So the keepalive's own answer cannot tell.
   * - A linearizable request answered by member M shows that M is past that window: a deposed
   *   leader cannot complete a ReadIndex or commit at its old term (a quorum has moved on), so
   *   M has stepped down (or truly led, confirmed by a quorum) before it answers. A keepalive
   *   sent to M afterwards is renewed by a leader of that term or a later one, or forwarded to
   *   one.
   * - Should that leader be deposed after confirming the request, its successor is elected
   *   after that confirmation, so after the send, and etcd extends every lease by a whole TTL
   *   when a leader takes office: the lease still lives a TTL past `anchorMs`.
   *
   * A keepalive answered at a raft term below the request's is refused all the same
   * (`staleKeepalive`, the first form of this rule). Costs: one more round trip of latency per
   * refresh (request, then keepalives), no more requests.
   */
  async vouched<R>(ids: readonly string[], request: (member: Rpc) => Promise<R>, termOf: (read: R) => number): Promise<Vouched<R>> {
    if (this.closed) throw new StoreClosedError('etcd');
    const route = this.current();
    const anchorMs = performance.now();
    let read: R;
    try {
      read = await request(route.member);
    } catch (err) {
      // A member that did not answer (frozen, unreachable, between leaders) is left: the next
      // refresh opens a stream to the next member, as a keepalive timeout would have done. A
      // lease found gone is the lease's doing, not the member's.
      if (!leaseGone(err)) this.discard(route, unavailable('lease keepalive', err));
      throw err;
    }
    if (route.dead) throw new StoreUnavailableError('etcd: lease keepalive stream lost before its refresh was sent');
    const answers = await this.batch(ids, route);
    const stale = staleKeepalive(answers.term, termOf(read));
    if (stale) throw new StoreUnavailableError(stale);
    return { answers, read, anchorMs };
  }

  /** close ends the streams; pending batches fail. */
  close(): void {
    this.closed = true;
    for (const channel of [...this.channels]) this.discard(channel, new StoreClosedError('etcd'));
  }

  /** send writes one chunk on `channel` and resolves with its answers, or fails after the call deadline. */
  private send(ids: readonly string[], channel: KeepAliveRoute): Promise<KeepAliveAnswers> {
    if (this.closed) return Promise.reject(new StoreClosedError('etcd'));
    if (ids.length === 0) return Promise.resolve({ ttls: [], term: Infinity });
    if (channel.dead) return Promise.reject(new StoreUnavailableError('etcd: lease keepalive stream lost'));
    return new Promise<KeepAliveAnswers>((resolve, reject) => {
      const first = channel.next;
      channel.next += ids.length;
      const batch: Batch = {
        first,
        ttls: new Array<number>(ids.length).fill(0),
        owed: ids.length,
        term: Infinity,
        timer: setTimeout(() => {
          this.discard(
            channel,
            new StoreUnavailableError('etcd: lease keepalive stream abandoned after a timeout'),
            batch,
            new StoreUnavailableError(`etcd: lease keepalive got no answer within ${this.rpc.callTimeoutMs}ms`),
          );
        }, this.rpc.callTimeoutMs),
        resolve,
        reject,
      };
      channel.batches.push(batch);
      for (let i = 0; i < ids.length; i++) owe(channel.owed, ids[i]!, first + i);
      // Batches are written in the order they were numbered: these reactions run in that order.
      channel.opened.then(
        (stream) => {
          if (channel.dead) return; // this batch failed with the channel
          try {
            for (const id of ids) stream.write({ ID: id });
          } catch (err) {
            this.discard(channel, unavailable('lease keepalive', err));
          }
        },
        (err) => this.discard(channel, unavailable('lease keepalive', err)),
      );
    });
  }

  /**
   * current picks the channel with the fewest answers owed, opening another while fewer than
   * STREAMS are open. etcd answers each stream one request at a time, so two chunks on two
   * streams are renewed side by side — and one chunk's deadline is not spent waiting behind
   * another's answers — and a request that makes etcd wait (a lease that has expired but is not
   * yet revoked is answered only once it is) holds up one stream only.
   */
  private current(): KeepAliveRoute {
    let best: KeepAliveRoute | undefined;
    for (const c of this.channels) if (!best || c.owed.size < best.owed.size) best = c;
    if (best && (best.owed.size === 0 || this.channels.length >= STREAMS)) return best;
    const member = this.members.length > 0 ? this.members[this.nextMember++ % this.members.length]! : this.rpc;
    const channel: KeepAliveRoute = {
      member,
      opened: member.client.leaseClient.leaseKeepAlive(),
      owed: new Map(),
      batches: [],
      head: 0,
      next: 0,
      dead: false,
    };
    this.channels.push(channel);
    channel.opened.then(
      (stream) => {
        channel.stream = stream;
        if (channel.dead) return endQuietly(stream);
        stream.on('data', (res) => this.answer(channel, String(res.ID), Number(res.TTL), Number(res.header?.raft_term ?? 0)));
        stream.on('error', (err) => this.discard(channel, unavailable('lease keepalive stream', err)));
        stream.on('end', () => this.discard(channel, new StoreUnavailableError('etcd: lease keepalive stream ended')));
      },
      () => {}, // reported to the batches waiting on it
    );
    return channel;
  }

  /** answer files one lease's answer with the oldest request for it still waiting. */
  private answer(channel: KeepAliveRoute, id: string, ttl: number, term: number): void {
    if (channel.dead) return;
    const seq = takeOldest(channel.owed, id);
    if (seq === undefined) return; // not asked on this stream
    const { batches } = channel;
    // In order, the answer belongs to the oldest batch still waiting: the first one looked at.
    for (let k = channel.head; k < batches.length; k++) {
      const b = batches[k]!;
      if (seq < b.first) return;
      if (seq >= b.first + b.ttls.length) continue;
      b.ttls[seq - b.first] = ttl;
      if (term < b.term) b.term = term;
      if (--b.owed === 0) {
        clearTimeout(b.timer);
        b.resolve({ ttls: b.ttls, term: b.term });
        while (channel.head < batches.length && batches[channel.head]!.owed === 0) channel.head++;
        if (channel.head > 64 && channel.head * 2 > batches.length) {
          batches.splice(0, channel.head);
          channel.head = 0;
        }
      }
      return;
    }
  }

  /**
   * discard fails every batch still waiting on the channel (`timedOut`, if given, with its own
   * reason) and ends the stream; late answers on it are ignored.
   */
  private discard(channel: KeepAliveRoute, err: Error, timedOut?: Batch, timeoutErr?: Error): void {
    if (channel.dead) return;
    channel.dead = true;
    const i = this.channels.indexOf(channel);
    if (i >= 0) this.channels.splice(i, 1);
    if (channel.stream) endQuietly(channel.stream);
    const waiting = channel.batches.slice(channel.head).filter((b) => b.owed > 0);
    channel.batches.length = 0;
    channel.owed.clear();
    for (const b of waiting) {
      clearTimeout(b.timer);
      b.owed = 0;
      b.reject(b === timedOut && timeoutErr ? timeoutErr : err);
    }
  }
}

/** owe notes request number `seq` for lease `id` (after any older one for the same lease). */
function owe(owed: Map<string, number | number[]>, id: string, seq: number): void {
  const prior = owed.get(id);
  if (prior === undefined) owed.set(id, seq);
  else if (typeof prior === 'number') owed.set(id, [prior, seq]);
  else prior.push(seq);
}

/** takeOldest removes and returns the oldest request number still owed an answer for `id`. */
function takeOldest(owed: Map<string, number | number[]>, id: string): number | undefined {
  const v = owed.get(id);
  if (v === undefined || typeof v === 'number') {
    owed.delete(id);
    return v;
  }
  const seq = v.shift();
  if (v.length === 1) owed.set(id, v[0]!);
  return seq;
}

/**
 * endQuietly half-closes, then cancels, a stream. Half-closing first matters: etcd3 reports an
 * error on a still-writable stream to its connection pool, which would reset every connection
 * to the host for a cancellation we asked for ourselves.
 */
export function endQuietly(stream: { end(): void; cancel(): void; on(event: 'error', fn: (err: Error) => void): unknown }): void {
  stream.on('error', () => {});
  try {
    stream.end();
    stream.cancel();
  } catch {
    // already gone
  }
}

/**
 * staleKeepalive tells why a keepalive batch must not count as a renewal, or undefined if it may:
 * `keepaliveTerm` is the batch's term (KeepAliveAnswers.term), `requestTerm` the raft term of the
 * linearizable request (a txn that reads or writes) answered before the keepalives were sent (see
 * `vouched`). A lower keepalive term means the answer came from a member that had lost
 * leadership: its "TTL > 0" says nothing about the lease on the real leader.
 * Refusing also when the term merely moved on (a raft election between the two answers) is safe:
 * the renewal is tried again, and the leader steps down by its own deadline if it keeps failing.
 */
export function staleKeepalive(keepaliveTerm: number, requestTerm: number): string | undefined {
  if (!(keepaliveTerm < requestTerm)) return undefined;
  return `etcd: a lease keepalive was answered at raft term ${keepaliveTerm}, older than the term ${requestTerm} of the request that vouched for it (a deposed leader answering from its own lease table); not counted as a renewal`;
}
