import { Etcd3, EtcdLeaseInvalidError, isRecoverableError, type IOptions, type KVClient } from 'etcd3';
import { StoreUnavailableError, errorMessage } from '../../core/errors.js';
import type { EtcdConnection } from './config.js';

/** CallOptions are grpc's per-call options (here: the deadline). */
export type CallOptions = NonNullable<Parameters<KVClient['range']>[1]>;
type Policy = NonNullable<NonNullable<IOptions['faultHandling']>['global']>;

/**
 * policy is a minimal stand-in for a cockatiel policy (etcd3's fault-handling hook), so this
 * folder depends on etcd3 alone. `attempts` > 1 retries recoverable errors at once, which with
 * several endpoints moves the call to the next one.
 */
function policy(attempts: number): Policy {
  const execute = async <T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn({ signal: new AbortController().signal });
      } catch (err) {
        if (attempt >= attempts || !(err instanceof Error) || !isRecoverableError(err)) throw err;
      }
    }
  };
  return { execute } as unknown as Policy;
}

/**
 * createClient builds the etcd3 client for a URL. etcd3's defaults retry a failed call three
 * times and then open a circuit breaker for five seconds; both would stretch a failure past the
 * elector's renew deadline and delay recovery after a restart. Here a call fails after its own
 * deadline, and is retried at once only on another endpoint.
 */
export function createClient(connection: EtcdConnection, callTimeoutMs: number): Etcd3 {
  return new Etcd3({
    hosts: [...connection.hosts],
    auth: connection.auth && { ...connection.auth, callOptions: () => ({ deadline: Date.now() + callTimeoutMs }) },
    dialTimeout: callTimeoutMs,
    defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + callTimeoutMs }),
    faultHandling: { global: policy(connection.hosts.length), host: () => policy(1) },
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
