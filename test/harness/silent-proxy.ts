/**
 * SilentProxy forwards TCP connections to a server on loopback. `silence()` makes every
 * connection open so far go quiet for good — nothing forwarded either way, no reset, no close —
 * as when a host or a middlebox dies mid-connection, while new connections pass again (the
 * network is back). `onClientData` sees every chunk a client sends (to count its requests).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export class SilentProxy {
  port = 0;
  private server?: Server;
  private readonly open = new Set<Socket>();
  private readonly silenced = new Set<Socket>();

  constructor(private readonly onClientData?: (chunk: Buffer, connection: object) => void) {}

  async listen(targetPort: number): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect({ host: '127.0.0.1', port: targetPort });
      const connection = {};
      client.on('data', (chunk: Buffer) => {
        upstream.write(chunk);
        this.onClientData?.(chunk, connection);
      });
      upstream.on('data', (chunk) => client.write(chunk));
      for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
        a.on('error', () => b.destroy());
        a.on('close', () => b.destroy());
        this.open.add(a);
      }
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  silence(): void {
    for (const s of this.open) {
      s.pause();
      this.silenced.add(s);
    }
    this.open.clear();
  }

  close(): void {
    for (const s of [...this.open, ...this.silenced]) s.destroy();
    this.server?.close();
  }
}
