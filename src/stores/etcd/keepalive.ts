import type { IDuplexStream, ILeaseKeepAliveRequest, ILeaseKeepAliveResponse } from 'etcd3';
import { StoreClosedError, StoreUnavailableError } from '../../core/errors.js';
import { unavailable, type Rpc } from './client.js';

type Stream = IDuplexStream<ILeaseKeepAliveRequest, ILeaseKeepAliveResponse>;

interface Waiter {
  resolve(ttlSeconds: number): void;
  reject(err: Error): void;
}

/** One LeaseKeepAlive stream and the answers it still owes, per lease ID, in order. */
interface Channel {
  stream?: Stream;
  readonly opened: Promise<Stream>;
  readonly waiting: Map<string, Waiter[]>;
  dead: boolean;
}

/**
 * KeepAliveStream refreshes leases over one long-lived LeaseKeepAlive stream: a batch writes
 * one request per lease and reads the answers, so any number of leases cost one round trip.
 *
 * A batch that gets no answer within the call deadline fails with StoreUnavailableError and the
 * stream is thrown away: a late answer must never be taken for a later request's, because a
 * renewal counts its lease from when *it* was sent.
 */
export class KeepAliveStream {
  private channel?: Channel;
  private closed = false;

  constructor(private readonly rpc: Rpc) {}

  /** keepAlive refreshes every lease; resolves with each one's remaining TTL in seconds (0: gone). */
  keepAlive(ids: readonly string[]): Promise<number[]> {
    if (this.closed) return Promise.reject(new StoreClosedError('etcd'));
    if (ids.length === 0) return Promise.resolve([]);
    const channel = this.current();
    return new Promise<number[]>((resolve, reject) => {
      const ttls = new Array<number>(ids.length);
      let remaining = ids.length;
      let settled = false;
      const finish = (err?: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) {
          for (const w of mine) for (const queue of channel.waiting.values()) queue.includes(w) && queue.splice(queue.indexOf(w), 1);
          reject(err);
        } else {
          resolve(ttls);
        }
      };
      const timer = setTimeout(() => {
        finish(new StoreUnavailableError(`etcd: lease keepalive got no answer within ${this.rpc.callTimeoutMs}ms`));
        this.discard(channel, new StoreUnavailableError('etcd: lease keepalive stream abandoned after a timeout'));
      }, this.rpc.callTimeoutMs);
      const mine: Waiter[] = ids.map((id, i) => {
        const w: Waiter = {
          resolve: (ttl) => {
            ttls[i] = ttl;
            if (--remaining === 0) finish();
          },
          reject: (err) => finish(err),
        };
        const queue = channel.waiting.get(id) ?? [];
        queue.push(w);
        channel.waiting.set(id, queue);
        return w;
      });
      channel.opened.then(
        (stream) => {
          if (settled || channel.dead) return;
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

  /** close ends the stream; pending batches fail. */
  close(): void {
    this.closed = true;
    if (this.channel) this.discard(this.channel, new StoreClosedError('etcd'));
  }

  private current(): Channel {
    if (this.channel && !this.channel.dead) return this.channel;
    const channel: Channel = {
      opened: this.rpc.client.leaseClient.leaseKeepAlive(),
      waiting: new Map(),
      dead: false,
    };
    this.channel = channel;
    channel.opened.then(
      (stream) => {
        channel.stream = stream;
        if (channel.dead) return endQuietly(stream);
        stream.on('data', (res) => channel.waiting.get(String(res.ID))?.shift()?.resolve(Number(res.TTL)));
        stream.on('error', (err) => this.discard(channel, unavailable('lease keepalive stream', err)));
        stream.on('end', () => this.discard(channel, new StoreUnavailableError('etcd: lease keepalive stream ended')));
      },
      () => {}, // reported to the batches waiting on it
    );
    return channel;
  }

  private discard(channel: Channel, err: Error): void {
    if (channel.dead) return;
    channel.dead = true;
    if (this.channel === channel) this.channel = undefined;
    if (channel.stream) endQuietly(channel.stream);
    const waiters = [...channel.waiting.values()].flat();
    channel.waiting.clear();
    for (const w of waiters) w.reject(err);
  }
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
