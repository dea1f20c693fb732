/**
 * RegisterClient speaks the register's line protocol (chaos/register.ts) over one TCP
 * connection (loopback, or the register host's address under --net netns), one request at a time, answers in order.
 */
import { connect, type Socket } from 'node:net';

/** RegisterClient sends requests to the fenced register and resolves their one-line answers. */
export class RegisterClient {
  private socket?: Socket;
  private buffered = '';
  private waiting: ((line: string) => void)[] = [];

  constructor(
    readonly port: number,
    readonly host = '127.0.0.1',
  ) {}

  /** connect opens (or reopens) the connection; a lost connection fails the requests in flight. */
  connect(): Promise<void> {
    this.buffered = '';
    return new Promise((resolve, reject) => {
      const s = connect({ host: this.host, port: this.port }, () => resolve());
      s.setNoDelay(true);
      // Events of a connection already replaced must not fail the new one's requests.
      s.on('error', (err) => {
        reject(err);
        if (this.socket === s) this.fail();
      });
      s.on('close', () => {
        if (this.socket === s) this.fail();
      });
      s.on('data', (chunk) => {
        this.buffered += chunk.toString('utf8');
        let nl: number;
        while ((nl = this.buffered.indexOf('\n')) >= 0) {
          const line = this.buffered.slice(0, nl);
          this.buffered = this.buffered.slice(nl + 1);
          this.waiting.shift()?.(line);
        }
      });
      this.socket = s;
    });
  }

  get connected(): boolean {
    return !!this.socket && !this.socket.destroyed;
  }

  /** request sends one line and resolves with the answer ('' if the connection is lost). */
  request(line: string): Promise<string> {
    return new Promise((resolve) => {
      if (!this.connected) return resolve('');
      this.waiting.push(resolve);
      this.socket!.write(line + '\n');
    });
  }

  /** lastWriter asks who the register last accepted a write from, and how long ago. */
  async lastWriter(): Promise<{ from: string; token: number; ageMs: number } | undefined> {
    const [tag, from, token, age] = (await this.request('Q')).split(' ');
    if (tag !== 'L' || !from || from === '-') return undefined;
    return { from, token: Number(token), ageMs: Number(age) };
  }

  close(): void {
    this.socket?.destroy();
    this.fail();
  }

  private fail(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const w of waiting) w('');
  }
}
