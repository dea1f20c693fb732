import { Etcd3, EtcdLeaseInvalidError, GRPCDeadlineExceededError, isRecoverableError, type IOptions, type KVClient } from 'etcd3';
import { StoreUnavailableError, errorMessage } from '../../core/errors.js';
import type { EtcdConnection } from './config.js';

/** CallOptions are grpc's per-call options (here: the deadline). */
export type CallOptions = NonNullable<Parameters<KVClient['range']>[1]>;
type Policy = NonNullable<NonNullable<IOptions['faultHandling']>['global']>;

/**
 * policy is a minimal stand-in for a cockatiel policy (etcd3's fault-handling hook), so this
 * folder depends on etcd3 alone. `attempts` > 1 retries recoverable errors (and slow calls, see
 * SlowCallError) at once, which with several endpoints moves the call to the next one.
 */
function policy(attempts: number): Policy {
  const execute = async <T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn({ signal: new AbortController().signal });
      } catch (err) {
        const retry = err instanceof Error && (isRecoverableError(err) || err instanceof SlowCallError);
        if (attempt >= attempts || !retry) throw err;
      }
    }
  };
  return { execute } as unknown as Policy;
}

/**
 * SlowCallError is a call that missed its deadline on a connection that is answering others.
 * Unlike etcd3's own deadline error it is not "recoverable", so etcd3 does not reset the
 * connection for it; with several endpoints it is still tried on the next one (see policy).
 */
export class SlowCallError extends Error {
  constructor(cause: Error) {
    super(cause.message, { cause });
    this.name = 'SlowCallError';
  }
}

/**
 * hostPolicy is the per-endpoint policy: one attempt, and a judgement of missed deadlines.
 *
 * etcd3 closes every connection to an endpoint after any "recoverable" error from it, and a
 * missed deadline is one. A handle with thousands of leases has thousands of calls and stream
 * messages on one connection at busy moments (start-up, a watch stream being rebuilt); when one
 * call came back after its deadline, the reset failed all the others — keepalive and watch
 * streams included — and their retries missed their deadlines in turn: a handle that never got
 * out of it. Here a missed deadline resets the connection only if nothing was answered on it
 * within one deadline before: then it may well be dead (a frozen server, a black hole), and a
 * new one is what is needed. Otherwise the call just failed: StoreUnavailableError as ever.
 */
function hostPolicy(callTimeoutMs: number): Policy {
  let answeredAt = -Infinity;
  const execute = async <T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T): Promise<T> => {
    try {
      const result = await fn({ signal: new AbortController().signal });
      answeredAt = performance.now();
      return result;
    } catch (err) {
      if (!(err instanceof Error) || !isRecoverableError(err)) {
        answeredAt = performance.now(); // the server answered, with an error
      } else if (err instanceof GRPCDeadlineExceededError && performance.now() - answeredAt < callTimeoutMs) {
        throw new SlowCallError(err);
      }
      throw err;
    }
  };
  return { execute } as unknown as Policy;
}

/**
 * KEEPALIVE_PING_MS and KEEPALIVE_TIMEOUT_MS: while a call or stream is open (a standby always
 * has its watch stream), the client sends an HTTP/2 PING this long after the last one was
 * answered, and drops the connection when one goes unanswered for the timeout. The server
 * answers pings in its HTTP/2 layer — they are no gRPC requests — and allows one every 5 s
 * (etcd's --grpc-keepalive-min-time). This is how a watch stream that died without a word (a
 * crashed host, a dropped NAT entry) is found within 20 s: the broken stream then makes every
 * lock watch read again and wake its listeners (watch-hub.ts, lock-watch.ts). The timeout is
 * long on purpose: the answer is read on the event loop, so a process stalled longer than the
 * timeout drops a healthy connection — and with it every call, keepalive and watch of the
 * handle (see hostPolicy for why that is costly). A stall that long already outlasts the
 * default renew deadline (10 s).
 */
const KEEPALIVE_PING_MS = 10_000;
const KEEPALIVE_TIMEOUT_MS = 10_000;

/**
 * createClient builds the etcd3 client for a URL. etcd3's defaults retry a failed call three
 * times and then open a circuit breaker for five seconds; both would stretch a failure past the
 * elector's renew deadline and delay recovery after a restart. Here a call fails after its own
 * deadline, and is retried at once only on another endpoint (see hostPolicy for when a missed
 * deadline also replaces the connection). Connections are pinged (KEEPALIVE_PING_MS).
 */
export function createClient(connection: EtcdConnection, callTimeoutMs: number): Etcd3 {
  return new Etcd3({
    hosts: [...connection.hosts],
    grpcOptions: { 'grpc.keepalive_time_ms': KEEPALIVE_PING_MS, 'grpc.keepalive_timeout_ms': KEEPALIVE_TIMEOUT_MS },
    auth: connection.auth && { ...connection.auth, callOptions: () => ({ deadline: Date.now() + callTimeoutMs }) },
    dialTimeout: callTimeoutMs,
    defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + callTimeoutMs }),
    faultHandling: { global: policy(connection.hosts.length), host: () => hostPolicy(callTimeoutMs) },
  });
}

/**
 * Rpc is the raw etcd API with a deadline on every call and every failure translated into
 * StoreUnavailableError (the original error is its `cause`).
 *
 * On a client built by createClient the deadline comes from its defaultCallOptions, evaluated
 * per attempt, so a retry on another endpoint gets a fresh one. A client the caller built gets
 * the deadline passed with each call instead (one deadline for all its attempts).
 */
export class Rpc {
  constructor(
    readonly client: Etcd3,
    readonly callTimeoutMs: number,
    private readonly deadlinePerAttempt: boolean,
    /** The one endpoint this client talks to, when it was built for a single member of several. */
    readonly member?: string,
  ) {}

  /** call runs one unary etcd call under the deadline. */
  async call<T>(what: string, fn: (options: CallOptions | undefined) => Promise<T>): Promise<T> {
    try {
      return await fn(this.deadlinePerAttempt ? undefined : { deadline: Date.now() + this.callTimeoutMs });
    } catch (err) {
      throw unavailable(what, err);
    }
  }
}

/** unavailable wraps any etcd3/grpc failure as StoreUnavailableError with a one-line message. */
export function unavailable(what: string, err: unknown): StoreUnavailableError {
  if (err instanceof StoreUnavailableError) return err;
  return new StoreUnavailableError(`etcd: ${what} failed: ${errorMessage(err)}`, { cause: err });
}

/** leaseGone tells whether a failure means the lease named in the request no longer exists. */
export function leaseGone(err: unknown): boolean {
  const cause = err instanceof StoreUnavailableError ? err.cause : err;
  return cause instanceof EtcdLeaseInvalidError || /requested lease not found/.test(errorMessage(cause));
}
