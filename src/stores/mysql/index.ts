/**
 * mysql://… and mariadb://… — leases in one InnoDB table on MySQL 8.0+ or MariaDB 10.5+.
 *
 * The table (default `baton_leases`, `?table=` names another; schema in sql.ts) holds three
 * kinds of rows, keyed by `k`:
 *
 *   lease/<lock>    the lease record, JSON (kit/record-codec.ts); `version` is its revision.
 *                   Never deleted by baton: a release writes holder null.
 *   term/<lock>     the lock's term counter, a decimal number; never deleted.
 *   ledger/<key>    a ledger entry (job state, the candidate registry); removed only on its version.
 *
 * The fencing term lives in the `term/<lock>` row. An acquisition raises it by compare-and-set
 * on that row's version (to max(counter, lease term) + 1) before it writes the lease by
 * compare-and-set on the lease's version (kit/cas-store.ts): three short statements, no
 * transaction held open between them. The counter cannot go back: it is never deleted, every
 * write of it is conditional, and InnoDB commits are durable across restarts
 * (innodb_flush_log_at_trx_commit=1, the default). A renewal is one UPDATE; a batch of them
 * (renewRevisions, what many leases in one process send) is one UPDATE per 1,000 leases that
 * rewrites only renewedAt inside each record's text (backend.ts, sql.ts).
 *
 * Correctness never uses GET_LOCK or any session state, so the store works on Galera and
 * behind connection-sharing proxies, and a dead connection holds nothing. On a MariaDB Galera
 * node every statement also asks for a causality wait (galera.ts), found out once at open. There is no change
 * feed: standbys poll (capabilities.notify is false).
 *
 * The table is created on first use if missing (needs CREATE); afterwards SELECT, INSERT and
 * UPDATE on it are enough (DELETE only for tests).
 */
import type { Pool, PoolOptions } from 'mysql2/promise';
import { InvalidConfigError, errorMessage } from '../../core/errors.js';
import { CasStore } from '../kit/cas-store.js';
import { withTimeout } from '../kit/timeout.js';
import { MysqlBackend, mysqlError } from './backend.js';
import { galeraSyncWait } from './galera.js';
import { DEFAULT_TABLE, DEFAULT_TIMEOUT_MS, parseMysqlUrl, validateTableName, type MysqlConfig } from './config.js';
import { MysqlStatements } from './sql.js';

export { parseMysqlUrl, type MysqlConfig } from './config.js';

/** MysqlStoreOptions: give `url` (baton makes its own pool) or `pool` (yours; baton never ends it). */
export interface MysqlStoreOptions {
  /** `mysql://user:pass@host:port/database[?table=baton_leases&timeout=2s&pool_max=4]`, or its parsed form. */
  url?: string | MysqlConfig;
  /** A mysql2 promise pool (`mysql2/promise` createPool) the application already has. */
  pool?: Pool;
  /** Table; overrides the URL's. Default `baton_leases`. */
  table?: string;
  /** Bound on every statement, ms; overrides the URL's. Default 2000. */
  timeoutMs?: number;
}

type MysqlSdk = typeof import('mysql2/promise');

async function loadSdk(): Promise<MysqlSdk> {
  try {
    const sdk = (await import('mysql2/promise')) as MysqlSdk & { default?: MysqlSdk };
    return sdk.default ?? sdk;
  } catch (err) {
    throw new InvalidConfigError(`mysql: the mysql2 package is not installed (npm install mysql2): ${errorMessage(err)}`);
  }
}

/** ER_NO_SUCH_TABLE: the table does not exist yet. */
const ER_NO_SUCH_TABLE = 1146;

/** MysqlStore is a LeaseStore on a MySQL/MariaDB table; open one with `MysqlStore.open`. */
export class MysqlStore extends CasStore {
  /** open makes a pool (unless given one) and creates the table if missing; unreachable → StoreUnavailableError. */
  static async open(options: MysqlStoreOptions): Promise<MysqlStore> {
    const config = typeof options.url === 'string' ? parseMysqlUrl(options.url) : options.url;
    if (!config && !options.pool) throw new InvalidConfigError('mysql: give a url or a pool');
    const table = validateTableName(options.table ?? config?.table ?? DEFAULT_TABLE);
    const timeoutMs = options.timeoutMs ?? config?.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const label = config ? `${config.host}:${config.port}/${config.database}` : 'pool';
    const pool = options.pool ?? (await loadSdk()).createPool(poolOptions(config!, timeoutMs));
    let sql: MysqlStatements;
    try {
      await ensureTable(pool, new MysqlStatements(table), timeoutMs);
      sql = new MysqlStatements(table, await galeraSyncWait(pool, timeoutMs));
    } catch (err) {
      if (!options.pool) await pool.end().catch(() => {});
      throw mysqlError(err, label);
    }
    return new MysqlStore(new MysqlBackend(pool, sql, { timeoutMs, ownsPool: !options.pool, label }));
  }

  private constructor(backend: MysqlBackend) {
    super(backend);
  }
}

function poolOptions(c: MysqlConfig, timeoutMs: number): PoolOptions {
  return {
    host: c.host,
    port: c.port,
    user: c.user,
    password: c.password,
    database: c.database,
    connectionLimit: c.poolMax,
    connectTimeout: Math.max(timeoutMs, 1_000),
    // A dead peer's socket is noticed by TCP keepalive instead of lingering in the pool.
    enableKeepAlive: true,
    keepAliveInitialDelay: 10_000,
    maxIdle: c.poolMax,
    idleTimeout: 60_000,
    charset: 'utf8mb4',
    supportBigNumbers: true,
  };
}

/** ensureTable probes the table and creates it only if missing (CREATE is not needed afterwards). */
async function ensureTable(pool: Pool, sql: MysqlStatements, timeoutMs: number): Promise<void> {
  try {
    await withTimeout('mysql', 'probe', timeoutMs + 250, pool.query({ sql: sql.probe, timeout: timeoutMs }));
  } catch (err) {
    if ((err as { errno?: number }).errno !== ER_NO_SUCH_TABLE) throw err;
    await withTimeout('mysql', 'create table', timeoutMs * 5, pool.query({ sql: sql.create, timeout: timeoutMs * 5 }));
  }
}
