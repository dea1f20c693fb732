/**
 * ChangeFeed keeps one session LISTENing on the store's channel for as long as someone watches.
 *
 * LISTEN is session state, so it needs a dedicated connection that is not shared through a
 * pool (and cannot go through a transaction-mode pooler). The session can die quietly — a
 * killed server, a cut connection, a frozen server whose socket stays open — so it is probed
 * every heartbeat; when it fails, it is replaced with backoff and LISTEN is sent again. Changes
 * made while nobody listened are lost: `onLost` tells the store to wake its watchers (who poll
 * until the feed is back), and after a re-LISTEN `onResubscribed` has them read afresh.
 */
import type { Notification } from 'pg';

/** ListenClient is the part of a pg.Client the feed uses. */
export interface ListenClient {
  query(config: { text: string; query_timeout?: number }): Promise<unknown>;
  on(event: 'notification', listener: (msg: Notification) => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  removeListener(event: string, listener: (...args: any[]) => void): unknown;
}

/**
 * ListenSession is a connected client and how to give it back (end it, or leave an app's client
 * be). `close` is idempotent. The owner keeps an 'error' listener on the client for its whole
 * life, so a late socket error can never reach the process.
 */
export interface ListenSession {
  readonly client: ListenClient;
  close(): void;
}

/** ChangeFeedOptions wires a feed to its store. */
export interface ChangeFeedOptions {
  /** The channel's name; read when needed, as it may be known only once the store is set up. */
  channel: () => string;
  /** Opens (connects) a session that nothing else uses for queries. */
  open: () => Promise<ListenSession>;
  heartbeatMs: number;
  queryTimeoutMs: number;
  /** A notification on our channel. */
  onPayload(payload: string): void;
  /** LISTEN is in place again after a gap: anything may have changed meanwhile. */
  onResubscribed(): void;
  /** LISTEN was in place and is not any more: watchers must poll until it is back. */
  onLost(): void;
  /** A failure of the LISTEN session (reported, never thrown). */
  onError(err: unknown): void;
}

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 2_000;

/** ChangeFeed: see the header comment. Single use: `start` once, `stop` once. */
export class ChangeFeed {
  private stopped = false;
  private wake?: () => void;
  private session?: ListenSession;
  /** True once a session was lost or could not be opened: the next LISTEN follows a gap. */
  private gap = false;
  private listeningNow = false;
  /** When the session last delivered a notification (performance.now()). */
  private lastHeardMs = -Infinity;

  constructor(private readonly o: ChangeFeedOptions) {}

  /** listening tells whether LISTEN is currently in place. */
  get listening(): boolean {
    return this.listeningNow;
  }

  start(): void {
    void this.loop();
  }

  /** stop ends the session at once; pending reconnects are abandoned. */
  stop(): void {
    this.stopped = true;
    this.listeningNow = false;
    this.wake?.();
    this.session?.close();
  }

  private async loop(): Promise<void> {
    let retryMs = FIRST_RETRY_MS;
    while (!this.stopped) {
      try {
        await this.listenOnce(() => (retryMs = FIRST_RETRY_MS));
      } catch (err) {
        if (!this.stopped) this.o.onError(err);
      }
      const wasListening = this.listeningNow;
      this.listeningNow = false;
      this.session?.close();
      this.session = undefined;
      if (this.stopped) return;
      this.gap = true;
      if (wasListening) this.o.onLost();
      await this.sleep(retryMs);
      retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
    }
  }

  /** One session's life: open, LISTEN, then probe until it fails or the feed stops. */
  private async listenOnce(onListening: () => void): Promise<void> {
    const session = await this.o.open();
    this.session = session;
    if (this.stopped) return;
    const client = session.client;
    let lost: (err: unknown) => void = () => {};
    const failure = new Promise<void>((_, reject) => (lost = reject));
    failure.catch(() => {}); // observed below; never an unhandled rejection
    const onNotification = (msg: Notification) => {
      this.lastHeardMs = performance.now();
      if (msg.channel === this.o.channel() && msg.payload !== undefined) this.o.onPayload(msg.payload);
    };
    const onError = (err: Error) => lost(err);
    const onEnd = () => lost(new Error('LISTEN connection ended'));
    client.on('notification', onNotification);
    client.on('error', onError);
    client.on('end', onEnd);
    try {
      await Promise.race([client.query({ text: `LISTEN "${this.o.channel().replace(/"/g, '""')}"`, query_timeout: this.o.queryTimeoutMs }), failure]);
      if (this.stopped) return;
      this.listeningNow = true;
      onListening();
      if (this.gap) {
        this.gap = false;
        this.o.onResubscribed();
      }
      while (!this.stopped) {
        await Promise.race([this.sleep(this.o.heartbeatMs), failure]);
        if (this.stopped) return;
        // A notification within the last heartbeat already proved the session alive (a leader
        // notifies on every renewal): probe only a session that has gone quiet.
        if (performance.now() - this.lastHeardMs < this.o.heartbeatMs) continue;
        // A frozen server keeps the socket open and simply never answers: only a probe tells.
        await Promise.race([client.query({ text: 'SELECT 1', query_timeout: this.o.queryTimeoutMs }), failure]);
      }
    } finally {
      // The session's owner keeps a permanent 'error' listener, so removing ours is safe.
      client.removeListener('notification', onNotification);
      client.removeListener('end', onEnd);
      client.removeListener('error', onError);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}
