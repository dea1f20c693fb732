/**
 * ZkSession: one ZooKeeper session (one node-zookeeper-client Client) with promise calls that
 * fail fast and never hang.
 *
 * Why the care: node-zookeeper-client queues a request made while disconnected and sends it
 * whenever the connection comes back, has no read timeout (a frozen member keeps the socket open
 * and the client waits forever), and reports session expiry only after it reconnects and the
 * server refuses the session — never while it is cut off. So:
 * - a call waits for the connection at most its deadline and is never queued while disconnected
 *   (a late `create` would leave a node nobody knows about);
 * - at most MAX_IN_FLIGHT requests are in the client at once; the rest wait their turn in
 *   baton (InFlightCap), so 10,000 calls made at once do not all start their clocks together;
 * - every call has a deadline, counted from when it is handed to the client; a call that times
 *   out on a connection that has heard nothing for as long destroys the socket, so the client
 *   moves on to the next member (same session). A connection that still answers is kept: a
 *   busy server answering a long queue in order is not a frozen one;
 * - a connection attempt that is not answered within a call deadline is dropped too: the
 *   client times the TCP connect only, not the handshake after it;
 * - once expired, the client is dropped and a new one made on the next call; `onExpired` tells
 *   the store, whose nodes of that session are gone;
 * - a connection that has heard nothing for two thirds of the session timeout is dropped (the
 *   read timeout ZooKeeper's own Java client keeps): the client pings after a third of it idle,
 *   so a live server is heard from at least that often, and a session that only holds watches
 *   (a standby's, which makes no calls) still finds out that its member froze or vanished.
 * Nobody's safety rests on hearing about expiry: an elector steps down on its own deadline.
 */
import { StoreUnavailableError } from '../../core/errors.js';
import { unavailable } from '../kit/errors.js';
import { withTimeout } from '../kit/timeout.js';
import { InFlightCap } from './in-flight.js';
import type { ZkClient, ZkModule, ZkStat } from './sdk.js';
import { ZK } from './sdk.js';

/**
 * MAX_IN_FLIGHT is how many requests a session has in the client at once. Enough to keep the
 * connection busy (ZooKeeper commits a pipeline's writes in groups), few enough that the last of
 * them is answered well within the call deadline on a loaded server.
 */
export const MAX_IN_FLIGHT = 256;

/** SessionEvents are what a session tells its store. */
export interface SessionEvents {
  /** The connection is up (again). `fresh` is true for a new session (after expiry or at first). */
  connected(session: ZkSession, fresh: boolean): void;
  /** The connection dropped; the session may still be alive on the server. */
  disconnected(session: ZkSession): void;
  /** The server expired the session: its ephemeral nodes are gone. */
  expired(session: ZkSession): void;
}

/** ZkSession: see the file comment. */
export class ZkSession {
  private client?: ZkClient;
  private up = false;
  private waiting: (() => void)[] = [];
  private closed = false;
  private lastHeardMs = 0;
  private deafTimer?: NodeJS.Timeout;
  private heardSocket?: NodeJS.EventEmitter;
  private silenceCheck?: NodeJS.Timeout;
  private readonly cap: InFlightCap;
  /** Bumped for every client, so events of a dropped client are ignored. */
  generation = 0;

  constructor(
    private readonly sdk: ZkModule,
    private readonly connectString: string,
    /** The session timeout asked for; the server may clamp it (see negotiatedMs). */
    readonly requestedMs: number,
    private readonly callTimeoutMs: number,
    private readonly events: SessionEvents,
    /** A client given by the library user: used as is, never closed, never replaced. */
    private readonly given?: ZkClient,
    /** At most this many requests in the client at once (see InFlightCap). */
    maxInFlight = MAX_IN_FLIGHT,
  ) {
    this.cap = new InFlightCap(maxInFlight);
  }

  /** inFlight is how many requests are in the client now, and how many wait for a turn. */
  get load(): { inFlight: number; waiting: number } {
    return { inFlight: this.cap.inFlight, waiting: this.cap.waiting };
  }

  /** connected tells whether the connection is up now. */
  get connected(): boolean {
    return this.up;
  }

  /** localPort is this session's local TCP port while connected (tests use it to find its member). */
  get localPort(): number | undefined {
    const socket = (this.client as unknown as { connectionManager?: { socket?: { localPort?: number } } } | undefined)?.connectionManager?.socket;
    return this.up ? socket?.localPort : undefined;
  }

  /** negotiatedMs is the session timeout the server granted (0 before the first connection). */
  get negotiatedMs(): number {
    return this.up && this.client ? this.client.getSessionTimeout() : 0;
  }

  /** ready resolves once connected, or throws StoreUnavailableError after the call deadline. */
  async ready(what: string): Promise<ZkClient> {
    if (this.closed) throw new StoreUnavailableError('zookeeper: the store handle is closed');
    const client = this.ensureClient();
    if (this.up) return client;
    // The client stops timing a connection attempt once TCP is up and waits for the handshake
    // answer forever (a frozen member, or a proxy whose upstream is gone): a wait that times
    // out drops that socket, so the client tries again (the next member, same session).
    await withTimeout('zookeeper', `${what}: connecting to ${this.connectString}`, this.callTimeoutMs, new Promise<void>((resolve) => this.waiting.push(resolve)), () => {
      if (this.client) this.kick(this.client);
    });
    // Possibly a new client (the session expired meanwhile): whichever is up now serves.
    if (!this.up || !this.client) throw new StoreUnavailableError(`zookeeper: ${what}: connection to ${this.connectString} lost`);
    return this.client;
  }

  /**
   * call runs one request under the call deadline: `fn` gets the client and a node-style callback.
   * The request waits its turn behind the in-flight cap (see InFlightCap) and its deadline counts
   * from when it is handed to the client. Waiting for a turn has no timer of its own: every
   * request ahead is answered, or failed within the call deadline by a dropped connection.
   * ZooKeeper's own error codes come back as ZkError (the caller decides which mean a lost race);
   * a lost connection or a timeout is StoreUnavailableError.
   */
  async call<T>(what: string, fn: (client: ZkClient, done: (err: unknown, value?: T) => void) => void): Promise<T> {
    const release = await this.cap.take();
    let client: ZkClient;
    try {
      client = await this.ready(what);
    } catch (err) {
      release();
      throw err;
    }
    // The slot is freed by the client's answer (or failure), not by our deadline: a request
    // given up on is still in the client, and the cap counts what the connection carries.
    const result = new Promise<T>((resolve, reject) => {
      try {
        fn(client, (err, value) => {
          release();
          if (err) reject(err);
          else resolve(value as T);
        });
      } catch (err) {
        release();
        reject(err);
      }
    });
    try {
      return await this.answered(what, result, client);
    } catch (err) {
      if (isZkError(err) && !isConnectionError(err)) throw err;
      throw unavailable('zookeeper', err, what);
    }
  }

  /**
   * answered waits for `result` at most the call deadline. The deadline is judged after pending
   * I/O (setImmediate), so an event loop that was itself busy reads an answer already in the
   * socket before calling it late. A late call drops the connection only if it is silent too.
   */
  private answered<T>(what: string, result: Promise<T>, client: ZkClient): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        setImmediate(() => {
          if (settled) return;
          this.unanswered(client);
          reject(new StoreUnavailableError(`zookeeper: ${what} timed out after ${this.callTimeoutMs} ms`));
        });
      }, this.callTimeoutMs);
    });
    return Promise.race([result, late]).finally(() => {
      settled = true;
      clearTimeout(timer);
    });
  }

  /**
   * unanswered: a request outran the call deadline. ZooKeeper answers a connection's requests in
   * order, so anything heard since it went out means the server is working through ours (a busy
   * server, a long queue): the connection is kept. One silent for the whole deadline is dropped
   * (a frozen member), so the client moves on, same session. While requests are still out, the
   * silence is looked at again when it would reach the deadline.
   */
  private unanswered(client: ZkClient): void {
    if (this.client !== client || this.given || !this.up) return;
    const silentMs = performance.now() - this.lastHeardMs;
    if (silentMs >= this.callTimeoutMs) {
      this.kick(client);
      return;
    }
    if (this.silenceCheck) return;
    this.silenceCheck = setTimeout(() => {
      this.silenceCheck = undefined;
      if (this.cap.inFlight > 0) setImmediate(() => this.unanswered(client));
    }, this.callTimeoutMs - silentMs + 1);
    this.silenceCheck.unref();
  }

  /** close ends the session (its ephemeral nodes go at once) unless the client was given. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.up = false;
    clearInterval(this.deafTimer);
    clearTimeout(this.silenceCheck);
    for (const w of this.waiting.splice(0)) w();
    this.cap.openAll();
    if (this.client && !this.given) this.client.close();
    this.client = undefined;
  }

  private ensureClient(): ZkClient {
    if (this.client) return this.client;
    const client = this.given ?? this.sdk.createClient(this.connectString, { sessionTimeout: this.requestedMs, spinDelay: 100, retries: 0 });
    const generation = ++this.generation;
    this.client = client;
    // A new client: the old one's requests will never be answered, so their slots are free.
    this.cap.reset();
    let fresh = true;
    client.on('state', (state) => {
      if (this.client !== client || this.generation !== generation) return;
      const name = state.getName();
      if (name === 'SYNC_CONNECTED') {
        this.up = true;
        this.listenForSilence(client);
        for (const w of this.waiting.splice(0)) w();
        this.events.connected(this, fresh);
        fresh = false;
      } else if (name === 'DISCONNECTED') {
        if (this.up) {
          this.up = false;
          this.events.disconnected(this);
        }
      } else if (name === 'EXPIRED' || name === 'AUTH_FAILED') {
        this.up = false;
        if (!this.given) {
          this.client = undefined;
          client.close();
        }
        this.events.expired(this);
        // A new session at once: calls waiting for a connection go on with it.
        if (!this.given && !this.closed && this.waiting.length > 0) this.ensureClient();
      }
    });
    if (!this.given) client.connect();
    else if (client.getState().getName() === 'SYNC_CONNECTED') this.up = true;
    return client;
  }

  /**
   * listenForSilence starts the read timeout for the connection just made: every third of the
   * negotiated session timeout, a connection silent for two thirds of it is dropped. The check
   * looks again after pending I/O (setImmediate) before it drops anything, so an event loop that
   * was itself stalled does not mistake its own backlog for a silent server.
   */
  private listenForSilence(client: ZkClient): void {
    clearInterval(this.deafTimer);
    const socket = (client as unknown as { connectionManager?: { socket?: NodeJS.EventEmitter } }).connectionManager?.socket;
    const timeoutMs = client.getSessionTimeout();
    if (this.given || !socket || !(timeoutMs > 0)) return;
    this.lastHeardMs = performance.now();
    if (socket !== this.heardSocket) {
      this.heardSocket = socket;
      socket.on('data', () => (this.lastHeardMs = performance.now()));
    }
    const limitMs = (timeoutMs * 2) / 3;
    const silent = () => this.client === client && this.up && performance.now() - this.lastHeardMs > limitMs;
    this.deafTimer = setInterval(() => {
      if (silent()) setImmediate(() => silent() && this.kick(client));
    }, timeoutMs / 3);
    this.deafTimer.unref();
  }

  /** kick drops a connection that stopped answering, so the client reconnects (possibly to another member). */
  private kick(client: ZkClient): void {
    if (this.client !== client || this.given) return;
    const socket = (client as unknown as { connectionManager?: { socket?: { destroy(): void } } }).connectionManager?.socket;
    socket?.destroy();
  }
}

/** ZkError is an error node-zookeeper-client built from a ZooKeeper error code. */
export interface ZkError extends Error {
  getCode(): number;
}

/** isZkError tells a ZooKeeper error (with a code) from anything else. */
export function isZkError(err: unknown): err is ZkError {
  return !!err && typeof (err as ZkError).getCode === 'function';
}

/** codeOf is the ZooKeeper error code of `err`, or undefined. */
export function codeOf(err: unknown): number | undefined {
  return isZkError(err) ? err.getCode() : undefined;
}

function isConnectionError(err: ZkError): boolean {
  const code = err.getCode();
  return code === ZK.CONNECTION_LOSS || code === ZK.SESSION_EXPIRED || code === ZK.OPERATION_TIMEOUT || code === ZK.AUTH_FAILED;
}

/** zxidNumber reads an 8-byte zxid (czxid, mzxid) as a number (an epoch < 2^21 fits exactly). */
export function zxidNumber(zxid: Buffer): number {
  return Number(zxid.readBigInt64BE(0));
}

/** statOf narrows an SDK stat. */
export type { ZkStat };
