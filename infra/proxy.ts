/**
 * PartitionProxy stands between clients and a network store on loopback, so a harness can cut
 * them off (chaos: one candidate's proxy; the conformance suite's `cutConnections`: every
 * handle's connections) while the server stays up. Shared by chaos runs and tests.
 *
 * - `blackhole`: every connection stays open but nothing is forwarded either way; bytes wait
 *   in socket buffers and arrive after the heal, as TCP retransmission would deliver them after
 *   a short outage. New connections are accepted and held silent.
 * - `reset`: every connection is reset (RST) and new ones are reset at once, as when a
 *   firewall rejects or a middlebox drops its state.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

/** PartitionMode is how a cut behaves: silent (blackhole) or loud (reset). */
export type PartitionMode = 'blackhole' | 'reset';

interface Pair {
  client: Socket;
  upstream: Socket;
}

/** PartitionProxy forwards 127.0.0.1:port to the store's port until cut. */
export class PartitionProxy {
  port = 0;
  private server?: Server;
  private readonly pairs = new Set<Pair>();
  private mode: PartitionMode | 'open' = 'open';

  constructor(readonly targetPort: number) {}

  /** listen starts accepting on a free loopback port; resolves with it. */
  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      const server = createServer((client) => this.accept(client));
      server.on('error', reject);
      server.listen(0, '127.0.0.1', () => {
        this.port = (server.address() as { port: number }).port;
        resolve(this.port);
      });
      this.server = server;
    });
  }

  /** cut partitions this candidate from the store. */
  cut(mode: PartitionMode): void {
    this.mode = mode;
    for (const pair of [...this.pairs]) {
      if (mode === 'reset') this.reset(pair);
      else this.hold(pair);
    }
  }

  /** cutAll resets every open connection and keeps accepting new ones (a dropped connection, not a partition). */
  cutAll(): void {
    for (const pair of [...this.pairs]) this.reset(pair);
  }

  /** heal forwards again; held bytes flow on. */
  heal(): void {
    this.mode = 'open';
    for (const pair of this.pairs) {
      pair.client.resume();
      pair.upstream.resume();
    }
  }

  /** close resets every connection and stops listening. */
  async close(): Promise<void> {
    for (const pair of [...this.pairs]) this.reset(pair);
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private accept(client: Socket): void {
    if (this.mode === 'reset') {
      client.resetAndDestroy();
      return;
    }
    client.setNoDelay(true);
    const upstream = connect({ host: '127.0.0.1', port: this.targetPort });
    upstream.setNoDelay(true);
    const pair: Pair = { client, upstream };
    this.pairs.add(pair);
    // Forward by hand rather than pipe(): pause() must stop the flow at once in both directions.
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk) => client.write(chunk));
    // A reset on one side is passed on as a reset; an orderly close as an orderly close.
    client.on('error', () => this.reset(pair));
    upstream.on('error', () => this.reset(pair));
    client.on('end', () => upstream.end());
    upstream.on('end', () => client.end());
    client.on('close', () => this.drop(pair));
    upstream.on('close', () => this.drop(pair));
    if (this.mode === 'blackhole') this.hold(pair);
  }

  private hold(pair: Pair): void {
    pair.client.pause();
    pair.upstream.pause();
  }

  private reset(pair: Pair): void {
    this.pairs.delete(pair);
    for (const s of [pair.client, pair.upstream]) {
      if (s.destroyed) continue;
      // resetAndDestroy() on a socket still connecting, or one whose end() (a shutdown request)
      // is under way, leaves a TCP handle that never closes and spins Node at exit: destroy those.
      if (s.pending || s.connecting || s.writableEnded) {
        s.destroy();
        continue;
      }
      try {
        s.resetAndDestroy();
      } catch {
        s.destroy();
      }
    }
  }

  /** drop follows one side's close: the other side flushes what it has, then goes too. */
  private drop(pair: Pair): void {
    if (!this.pairs.delete(pair)) return;
    for (const s of [pair.client, pair.upstream]) {
      if (s.destroyed) continue;
      s.end();
      setTimeout(() => s.destroy(), 1000).unref();
    }
  }
}
