/**
 * Server-sent events for the dashboard: one long response per browser tab, each message a
 * named event with a JSON body. Browsers reconnect on their own after a drop.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** HEARTBEAT_MS keeps idle connections open through proxies that time out silent streams. */
const HEARTBEAT_MS = 15_000;

/** EventStream fans messages out to every connected client. */
export class EventStream {
  private readonly clients = new Set<ServerResponse>();
  private heartbeat?: NodeJS.Timeout;

  /** onCountChange is called with the number of clients whenever it changes. */
  constructor(private readonly onCountChange: (count: number) => void = () => {}) {}

  get size(): number {
    return this.clients.size;
  }

  /** open turns `res` into an event stream and sends `first` (e.g. a snapshot) to it alone. */
  open(req: IncomingMessage, res: ServerResponse, first: { event: string; data: unknown }[]): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write('retry: 2000\n\n');
    for (const m of first) res.write(frame(m.event, m.data));
    this.clients.add(res);
    this.onCountChange(this.clients.size);
    this.heartbeat ??= setInterval(() => this.comment('ping'), HEARTBEAT_MS).unref();
    const drop = () => {
      if (!this.clients.delete(res)) return;
      this.onCountChange(this.clients.size);
      if (this.clients.size === 0 && this.heartbeat) {
        clearInterval(this.heartbeat);
        this.heartbeat = undefined;
      }
    };
    req.on('close', drop);
    res.on('close', drop);
  }

  /** send delivers one event to every client. */
  send(event: string, data: unknown): void {
    if (this.clients.size === 0) return;
    const text = frame(event, data);
    for (const res of this.clients) res.write(text);
  }

  /** close ends every stream (for shutdown). */
  close(): void {
    for (const res of [...this.clients]) res.end();
    this.clients.clear();
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }

  private comment(text: string): void {
    for (const res of this.clients) res.write(`: ${text}\n\n`);
  }
}

function frame(event: string, data: unknown): string {
  // JSON.stringify never emits raw newlines, so one data line is always enough.
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}
