/**
 * CasWriter sends the store's compare-and-set writes (`replace`, so every renewal) as the same
 * JetStream publish `kv.update` sends, but answered through one reply subscription of its own.
 *
 * Why: `kv.update` goes through `nc.request`, which for every request builds a timeout error
 * and an async-trace Error up front and a "cancelled" error once the answer is in (three stack
 * captures), and arms its own timer; with 10,000 leases renewed every 2 s that was over a
 * quarter of the process's CPU (docs/history/performance.md, 10,000 leases). Here a write costs a map
 * entry and one publish; timeouts share one timer (every write has the same bound, so their
 * deadlines come in the order they were sent and a queue suffices).
 *
 * The write, as `kv.update(key, value, revision)` sends it: the value published to
 * `$KV.<bucket>.<key>` (the bucket's edit subject) with the header
 * `Nats-Expected-Last-Subject-Sequence: <revision>` and a reply subject. The server answers
 * with a PubAck `{"stream":…,"seq":N}` (N is the new revision) or `{"error":{…}}`;
 * "wrong last sequence" (err_code 10071) is a lost race (null). Any other error, no responders,
 * a timeout or a closed connection is a StoreUnavailableError. Like `kv.update` after a
 * timeout, the write may still have been applied: the caller treats the outcome as unknown.
 */
import type { Msg, MsgHdrs, NatsConnection, NatsError, Subscription } from 'nats';
import { InvalidConfigError, StoreUnavailableError } from '../../core/errors.js';
import { unavailable } from '../kit/errors.js';

/** The parts of the nats package the writer needs (it is loaded lazily by index.ts). */
export interface CasWriterSdk {
  headers(): MsgHdrs;
  createInbox(prefix?: string): string;
}

/** The header that makes a JetStream publish conditional on the subject's last sequence. */
const EXPECTED_LAST_SUBJECT_SEQUENCE = 'Nats-Expected-Last-Subject-Sequence';
/** JetStream's "wrong last sequence" API error code: the compare-and-set lost. */
const WRONG_LAST_SEQUENCE = 10071;

interface Pending {
  /** The subject it was published to (a permission refusal names it). */
  readonly subject: string;
  readonly resolve: (revision: string | null) => void;
  readonly reject: (err: Error) => void;
  readonly deadline: number;
}

interface PubAck {
  stream?: string;
  seq?: number;
  error?: { code?: number; err_code?: number; description?: string };
}

const decoder = new TextDecoder();

/** CasWriter: see the file comment. One per store handle; `close` fails what is in flight. */
export class CasWriter {
  /** The reply subject prefix; a write's reply subject is this plus its token. */
  private readonly inbox: string;
  private readonly sub: Subscription;
  /** token → the write waiting for its answer. */
  private readonly pending = new Map<string, Pending>();
  /** Tokens in the order sent (so by deadline); answered ones are skipped when reached. */
  private queue: string[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;
  private nextToken = 0;
  /** Set once the writer can send no more: why (every later write is refused with it). */
  private closedWhy: string | undefined;

  /**
   * @param subjectPrefix the bucket's edit subject with its trailing dot (`$KV.<bucket>.`)
   * @param timeoutMs the bound on every write
   */
  constructor(
    private readonly nc: NatsConnection,
    private readonly sdk: CasWriterSdk,
    private readonly subjectPrefix: string,
    private readonly timeoutMs: number,
  ) {
    // The connection's own inbox prefix, if the application set one (its permissions may need it).
    const prefix = (nc as { options?: { inboxPrefix?: string } }).options?.inboxPrefix;
    this.inbox = `${sdk.createInbox(prefix)}.`;
    this.sub = nc.subscribe(`${this.inbox}*`, { callback: (err, msg) => this.answer(err, msg) });
    void this.sub.closed.then(() => this.failAll('the reply subscription closed'));
  }

  /** inFlight: how many writes await their answer. */
  get inFlight(): number {
    return this.pending.size;
  }

  /**
   * update writes `value` to `natsKey` if the key's last revision is still `revision`: the new
   * revision, or null when it is not (a lost race). Failures reject with StoreUnavailableError.
   */
  update(natsKey: string, value: Uint8Array, revision: number): Promise<string | null> {
    if (this.closedWhy !== undefined) return Promise.reject(new StoreUnavailableError(`nats: update: ${this.closedWhy}`));
    const token = (this.nextToken++).toString(36);
    const h = this.sdk.headers();
    h.set(EXPECTED_LAST_SUBJECT_SEQUENCE, String(revision));
    const subject = this.subjectPrefix + natsKey;
    return new Promise<string | null>((resolve, reject) => {
      try {
        this.nc.publish(subject, value, { reply: this.inbox + token, headers: h });
      } catch (err) {
        reject(unavailable('nats', err, 'update'));
        return;
      }
      this.pending.set(token, { subject, resolve, reject, deadline: performance.now() + this.timeoutMs });
      this.queue.push(token);
      this.timer ??= setTimeout(() => this.expire(), this.timeoutMs);
    });
  }

  /**
   * refused fails the writes in flight to `subject` with the server's refusal: a publish the
   * connection's user may not make is never answered (the server says so on the connection,
   * not to the reply subject), so without this it would end as a bare timeout.
   */
  refused(subject: string): void {
    for (const [token, w] of this.pending) {
      if (w.subject !== subject) continue;
      this.pending.delete(token);
      w.reject(new InvalidConfigError(`nats: update: Permissions Violation for Publish to "${subject}" (the server refused: the connection's user may not write to the bucket)`));
    }
  }

  /** close fails every write in flight and stops listening for answers. */
  close(): void {
    if (this.closedWhy !== undefined) return;
    this.failAll('the store is closed');
    this.sub.unsubscribe();
  }

  private answer(err: NatsError | null, msg: Msg): void {
    if (err) {
      // The subscription itself failed (a permissions error): nothing in flight can be answered.
      this.failAll(err.message);
      return;
    }
    const token = msg.subject.slice(this.inbox.length);
    const waiting = this.pending.get(token);
    if (!waiting) return; // timed out already, or a stray reply
    this.pending.delete(token);
    if (msg.data.length === 0) {
      // No payload: a status message; 503 means no stream listens on the subject.
      const code = msg.headers?.code;
      waiting.reject(new StoreUnavailableError(`nats: update: ${code === 503 ? 'no responders (is JetStream on and the bucket there?)' : `status ${code ?? 'none'}`}`));
      return;
    }
    let ack: PubAck;
    try {
      ack = JSON.parse(decoder.decode(msg.data)) as PubAck;
    } catch (e) {
      waiting.reject(unavailable('nats', e, 'update: unreadable answer'));
      return;
    }
    if (ack.error) {
      if (ack.error.err_code === WRONG_LAST_SEQUENCE) waiting.resolve(null);
      else waiting.reject(new StoreUnavailableError(`nats: update: ${ack.error.description ?? `error ${ack.error.code}`}`));
    } else if (!ack.stream || typeof ack.seq !== 'number') {
      waiting.reject(new StoreUnavailableError('nats: update: invalid JetStream publish acknowledgement'));
    } else {
      waiting.resolve(String(ack.seq));
    }
  }

  /** expire fails the writes whose deadline has passed and re-arms the timer for the next one. */
  private expire(): void {
    this.timer = undefined;
    const now = performance.now();
    while (this.head < this.queue.length) {
      const token = this.queue[this.head]!;
      const waiting = this.pending.get(token);
      if (waiting && waiting.deadline > now) {
        this.timer = setTimeout(() => this.expire(), Math.ceil(waiting.deadline - now));
        break;
      }
      this.head++;
      if (waiting) {
        this.pending.delete(token);
        waiting.reject(new StoreUnavailableError(`nats: update timed out after ${this.timeoutMs} ms`));
      }
    }
    // Drop the consumed front once it is most of the queue, so it does not grow without end.
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  private failAll(why: string): void {
    this.closedWhy ??= why;
    clearTimeout(this.timer);
    this.timer = undefined;
    const waiting = [...this.pending.values()];
    this.pending.clear();
    this.queue = [];
    this.head = 0;
    for (const w of waiting) w.reject(new StoreUnavailableError(`nats: update: ${why}`));
  }
}
