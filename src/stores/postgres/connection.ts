/**
 * PgConnection is how the PostgreSQL store reaches the server: the store's own pool (from a
 * URL), or a pg.Pool / pg.Client the application already has. It owns the hazards of
 * node-postgres: every query carries a client-side timeout, every client and pool has an
 * 'error' listener (an unhandled one would crash the process), and sessions for LISTEN are
 * opened apart from the query pool.
 *
 * `pg` is loaded here, lazily, and nowhere else in baton.
 */
import { createRequire } from 'node:module';
import type { Client, ClientConfig, Pool, PoolClient, PoolConfig, QueryConfig } from 'pg';
import { InvalidConfigError, errorMessage } from '../../core/errors.js';
import type { PostgresTuning } from './config.js';
import type { ListenClient, ListenSession } from './listener.js';
import { StatementQueue } from './priority-queue.js';

const require = createRequire(import.meta.url);

/** Row is one result row as node-postgres returns it. */
export type Row = Record<string, unknown>;
/**
 * QueryFn runs one statement and resolves with its rows. `timed`: the caller's deadline is already
 * running (a lease write an elector timed from its call); such statements go first (StatementQueue).
 */
export type QueryFn = (text: string, values?: unknown[], timed?: boolean) => Promise<Row[]>;

/** PgConnectionSource says where connections come from; exactly one is set. */
export interface PgConnectionSource {
  connectionString?: string;
  pool?: Pool;
  client?: Client;
}

/** How long `close` waits for the server to say goodbye before dropping sockets. */
const CLOSE_GRACE_MS = 1_000;

/** PgConnection: see the header comment. */
export class PgConnection {
  /** host:port/database, for messages (never the password). */
  readonly where: string;
  private readonly pg: typeof import('pg');
  private readonly pool?: Pool;
  private readonly client?: Client;
  private readonly ownsPool: boolean;
  /** Settings and class for the sessions we open ourselves (LISTEN). */
  private readonly sessionConfig?: ClientConfig;
  private readonly SessionClient: typeof Client;
  private readonly onPoolError: (err: Error) => void;
  /** Statements in flight on the pool, at most its size; the rest wait here in order (see StatementQueue). */
  private readonly queue?: StatementQueue;

  constructor(source: PgConnectionSource, private readonly tuning: PostgresTuning, onError: (err: unknown) => void) {
    const given = [source.connectionString, source.pool, source.client].filter((x) => x !== undefined).length;
    if (given !== 1) throw new InvalidConfigError('postgres: give exactly one of connectionString, pool or client');
    try {
      this.pg = require('pg');
    } catch (err) {
      throw new InvalidConfigError(`postgres: the pg package is not installed (npm install pg): ${errorMessage(err)}`);
    }
    this.onPoolError = (err) => onError(err);
    if (source.connectionString !== undefined) {
      const config: PoolConfig = {
        connectionString: source.connectionString,
        connectionTimeoutMillis: tuning.connectTimeoutMs,
        query_timeout: tuning.queryTimeoutMs,
        statement_timeout: tuning.statementTimeoutMs > 0 ? tuning.statementTimeoutMs : undefined,
        keepAlive: true,
        keepAliveInitialDelayMillis: 10_000,
      };
      this.sessionConfig = config;
      this.SessionClient = this.pg.Client;
      this.pool = new this.pg.Pool({ ...config, max: tuning.poolMax, idleTimeoutMillis: 30_000, allowExitOnIdle: true });
      this.ownsPool = true;
      this.where = describeTarget(source.connectionString);
    } else if (source.pool !== undefined) {
      this.pool = source.pool;
      this.ownsPool = false;
      const o = source.pool.options;
      this.sessionConfig = { ...o, password: o.password, connectionTimeoutMillis: o.connectionTimeoutMillis || tuning.connectTimeoutMs, keepAlive: true };
      // pg-pool keeps the client class it was given (pg-native, a subclass, …): use the same.
      this.SessionClient = (source.pool as unknown as { Client?: typeof Client }).Client ?? this.pg.Client;
      this.where = describeTarget(source.pool.options.connectionString, source.pool.options);
    } else {
      this.client = source.client!;
      this.ownsPool = false;
      this.SessionClient = this.pg.Client;
      this.where = describeTarget(undefined, (this.client as unknown as { connectionParameters?: ClientConfig }).connectionParameters);
      this.client.on('error', this.onPoolError);
    }
    this.pool?.on('error', this.onPoolError);
    // Never more statements than connections: pg-pool would queue the rest first come, first served.
    if (this.pool) this.queue = new StatementQueue(Math.max(1, this.pool.options.max ?? 10), this.pool.options.connectionTimeoutMillis || tuning.connectTimeoutMs);
  }

  /** query runs one statement, bounded by the query timeout (see QueryFn for `timed`). */
  query: QueryFn = async (text, values = [], timed = false) => {
    if (!this.pool) return this.onClient(() => this.client!.query(this.config(text, values))).then((res) => res.rows as Row[]);
    const pool = this.pool;
    return this.queue!.run(timed, async () => (await pool.query(this.config(text, values))).rows as Row[]);
  };

  /** One statement at a time on an application's Client (node-postgres no longer queues them for us). */
  private clientTail: Promise<unknown> = Promise.resolve();
  private onClient<T>(run: () => Promise<T>): Promise<T> {
    const result = this.clientTail.then(run, run);
    this.clientTail = result.catch(() => {});
    return result;
  }

  /** config adds the client-side timeout (missing from @types/pg) to a statement. */
  private config(text: string, values: unknown[]): QueryConfig {
    return { text, values, query_timeout: this.tuning.queryTimeoutMs } as QueryConfig;
  }

  /** transaction runs `fn` between BEGIN and COMMIT on one connection (ROLLBACK on failure). */
  async transaction<T>(fn: (query: QueryFn) => Promise<T>): Promise<T> {
    if (!this.pool) return this.onClient(() => this.transactionOn(this.client!, undefined, fn));
    const pool = this.pool;
    return this.queue!.run(false, async () => this.transactionOn(await pool.connect(), 'pooled', fn));
  }

  private async transactionOn<T>(client: Client | PoolClient, pooled: 'pooled' | undefined, fn: (query: QueryFn) => Promise<T>): Promise<T> {
    // A checked-out client is off the pool's watch: its errors must be caught here.
    const onError = () => {};
    client.on('error', onError);
    const query: QueryFn = async (text, values = []) =>
      (await client.query(this.config(text, values))).rows as Row[];
    let failure: unknown;
    try {
      await query('BEGIN');
      const result = await fn(query);
      await query('COMMIT');
      return result;
    } catch (err) {
      failure = err;
      await query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.removeListener('error', onError);
      if (pooled) (client as PoolClient).release(failure instanceof Error ? failure : undefined);
    }
  }

  /**
   * openListenSession opens a connection used for nothing but LISTEN. With an application's
   * Client there is no other session to open: LISTEN goes on that client, and closing only
   * sends UNLISTEN.
   */
  async openListenSession(channel: () => string): Promise<ListenSession> {
    if (this.client) {
      const client = this.client;
      const shared: ListenClient = {
        query: (config) => this.onClient(() => client.query(config as QueryConfig)),
        on: ((event: string, listener: (...args: never[]) => void) => client.on(event as 'end', listener as () => void)) as ListenClient['on'],
        removeListener: (event, listener) => client.removeListener(event, listener),
      };
      return {
        client: shared,
        close: () => void shared.query({ text: `UNLISTEN "${channel().replace(/"/g, '""')}"` }).catch(() => {}),
      };
    }
    const client = new this.SessionClient(this.sessionConfig);
    client.on('error', () => {}); // the feed listens while it uses the session; late errors land here
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      endClient(client);
    };
    try {
      await client.connect();
    } catch (err) {
      close();
      throw err;
    }
    // A watch alone should not keep a process alive; electors keep their own timers.
    (client as unknown as { unref(): void }).unref();
    return { client, close };
  }

  /** close ends the store's own pool (an application's pool or client is left open). */
  async close(): Promise<void> {
    this.pool?.removeListener('error', this.onPoolError);
    this.client?.removeListener('error', this.onPoolError);
    if (!this.ownsPool || !this.pool) return;
    const pool = this.pool;
    pool.on('error', () => {}); // errors of clients still closing
    // A frozen server never completes the goodbye; do not wait for it.
    await Promise.race([pool.end().catch(() => {}), new Promise((r) => setTimeout(r, CLOSE_GRACE_MS).unref())]);
  }
}

/** endClient says goodbye, and drops the socket if the server does not answer promptly. */
function endClient(client: Client): void {
  const timer = setTimeout(() => (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy(), CLOSE_GRACE_MS);
  timer.unref();
  client.end().then(
    () => clearTimeout(timer),
    () => {},
  );
}

/** describeTarget renders host:port/database from a URL or a config, without credentials. */
function describeTarget(connectionString?: string, config?: ClientConfig): string {
  if (connectionString) {
    try {
      const u = new URL(connectionString);
      const host = u.hostname || u.searchParams.get('host') || 'localhost';
      return `${host}:${u.port || 5432}${u.pathname && u.pathname !== '/' ? u.pathname : ''}`;
    } catch {
      // fall through to the config
    }
  }
  const host = config?.host ?? process.env.PGHOST ?? 'localhost';
  const port = config?.port ?? process.env.PGPORT ?? 5432;
  const db = config?.database ?? process.env.PGDATABASE;
  return `${host}:${port}${db ? `/${db}` : ''}`;
}
