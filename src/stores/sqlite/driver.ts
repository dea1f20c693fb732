/**
 * The SQLite driver under the store: Node's built-in `node:sqlite` where the running Node has
 * it (22.13 and later without a flag), else the `better-sqlite3` package (a native addon,
 * needed on Node 20). Both are synchronous bindings of the same library on the same file
 * format, so processes using different drivers share one database file safely.
 *
 * BATON_SQLITE_DRIVER=node|better-sqlite3 picks one explicitly (tests and the bench measure both).
 */
import { createRequire } from 'node:module';
import { InvalidConfigError, errorMessage } from '../../core/errors.js';

const require = createRequire(import.meta.url);

/** SqlStatement is a prepared statement: positional `?` or named (`@name`, bound by an object) parameters. */
export interface SqlStatement {
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): { changes: number };
}

/** SqlDatabase is the part of a driver the store uses. */
export interface SqlDatabase {
  /** Which driver opened the file. */
  readonly driver: SqliteDriverName;
  exec(sql: string): void;
  prepare(sql: string): SqlStatement;
  /** value runs a statement that returns one column of one row, e.g. `PRAGMA data_version`. */
  value(statement: SqlStatement): unknown;
  /** immediate runs `fn` inside BEGIN IMMEDIATE … COMMIT, rolling back if it throws. */
  immediate<T>(fn: () => T): T;
  close(): void;
}

/** SqliteDriverName names the two drivers. */
export type SqliteDriverName = 'node:sqlite' | 'better-sqlite3';

/** openDatabase opens (creating if needed) the file with the driver chosen as the file comment says. */
export function openDatabase(path: string, busyTimeoutMs: number, env: NodeJS.ProcessEnv = process.env): SqlDatabase {
  const wanted = env.BATON_SQLITE_DRIVER?.trim();
  if (wanted && wanted !== 'node' && wanted !== 'node:sqlite' && wanted !== 'better-sqlite3') {
    throw new InvalidConfigError(`sqlite: BATON_SQLITE_DRIVER is "${wanted}" (expected node or better-sqlite3)`);
  }
  if (wanted !== 'better-sqlite3') {
    const builtin = loadNodeSqlite();
    if (builtin) return openWithNodeSqlite(builtin, path, busyTimeoutMs);
    if (wanted) throw new InvalidConfigError(`sqlite: node:sqlite is not available on Node ${process.versions.node} (it needs Node 22.13 or later)`);
  }
  let Better: typeof import('better-sqlite3');
  try {
    Better = require('better-sqlite3');
  } catch (err) {
    const hint = `Node ${process.versions.node} has no built-in node:sqlite: npm install better-sqlite3, or use Node 22.13 or later`;
    throw new InvalidConfigError(`sqlite: ${hint} (${errorMessage(err)})`);
  }
  const db = new Better(path, { timeout: busyTimeoutMs });
  return {
    driver: 'better-sqlite3',
    exec: (sql) => void db.exec(sql),
    prepare: (sql) => db.prepare(sql) as unknown as SqlStatement,
    value: (s) => (s as unknown as import('better-sqlite3').Statement).pluck().get(),
    immediate: <T>(fn: () => T) => db.transaction(fn).immediate(),
    close: () => void db.close(),
  };
}

/** The part of `node:sqlite` used here (typed locally: @types/node 20 does not describe it). */
interface NodeSqlite {
  DatabaseSync: new (path: string) => {
    exec(sql: string): void;
    prepare(sql: string): { get(...p: unknown[]): unknown; all(...p: unknown[]): unknown[]; run(...p: unknown[]): { changes: number | bigint } };
    close(): void;
  };
}

let nodeSqlite: NodeSqlite | null | undefined;

/** loadNodeSqlite returns the built-in module, or null on a Node that lacks it (or hides it behind a flag). */
function loadNodeSqlite(): NodeSqlite | null {
  if (nodeSqlite !== undefined) return nodeSqlite;
  // process.getBuiltinModule (Node 20.16+) loads it without a top-level import that would fail on Node 20.
  const get = (process as { getBuiltinModule?: (id: string) => unknown }).getBuiltinModule;
  try {
    nodeSqlite = (get ? (get('node:sqlite') as NodeSqlite | undefined) : (require('node:sqlite') as NodeSqlite)) ?? null;
  } catch {
    nodeSqlite = null;
  }
  return nodeSqlite;
}

function openWithNodeSqlite(mod: NodeSqlite, path: string, busyTimeoutMs: number): SqlDatabase {
  const db = new mod.DatabaseSync(path);
  // The busy timeout as a pragma: the constructor's `timeout` option is newer than node:sqlite itself.
  db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.round(busyTimeoutMs))}`);
  const prepare = (sql: string): SqlStatement => {
    const s = db.prepare(sql);
    return {
      get: (...p) => s.get(...p),
      all: (...p) => s.all(...p),
      run: (...p) => ({ changes: Number(s.run(...p).changes) }),
    };
  };
  return {
    driver: 'node:sqlite',
    exec: (sql) => db.exec(sql),
    prepare,
    value: (s) => {
      const row = s.get() as Record<string, unknown> | undefined;
      return row ? Object.values(row)[0] : undefined;
    },
    immediate: <T>(fn: () => T) => {
      db.exec('BEGIN IMMEDIATE');
      try {
        const out = fn();
        db.exec('COMMIT');
        return out;
      } catch (err) {
        try {
          db.exec('ROLLBACK');
        } catch {
          // the failure already ended the transaction
        }
        throw err;
      }
    },
    close: () => db.close(),
  };
}

/**
 * isBusy tells whether a driver error means another connection holds the database (SQLITE_BUSY
 * or SQLITE_LOCKED): better-sqlite3 names it in `code`, node:sqlite gives the number in `errcode`.
 */
export function isBusy(err: unknown): boolean {
  const e = err as { code?: unknown; errcode?: unknown };
  const code = String(e?.code ?? '');
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return true;
  const primary = typeof e?.errcode === 'number' ? e.errcode & 0xff : -1;
  return primary === 5 || primary === 6;
}
