/**
 * Options of the PostgreSQL store: what a `postgres://` URL may carry beside the connection
 * itself, their defaults, and the checks on table and schema names (they are spliced into SQL,
 * so only plain lower-case identifiers are accepted).
 */
import { InvalidConfigError } from '../../core/errors.js';
import { parseDuration } from '../../core/duration.js';
import { redactUrl } from '../kit/url.js';

/** PostgresTuning holds the store's own settings (everything but how to connect). */
export interface PostgresTuning {
  /** Lease table; the term counters, ledger and revision sequence are named after it. Default `baton_leases`. */
  table: string;
  /** Schema of the tables; default: the connection's current schema (first on search_path). */
  schema?: string;
  /** Connections in the store's own pool. Default 4. */
  poolMax: number;
  /** Giving up on opening a connection (or waiting for a pooled one). Default 5 s. */
  connectTimeoutMs: number;
  /** Server-side limit per statement, sent at connection start; 0 sends nothing. Default 5 s. */
  statementTimeoutMs: number;
  /** Client-side limit per query, so a frozen server cannot hang a call. Default 6 s. */
  queryTimeoutMs: number;
  /** LISTEN for changes on a dedicated session (without it the store has no `watch`). Default true. */
  listen: boolean;
  /** How often the LISTEN session is probed, so a dead one is replaced. Default 5 s. */
  heartbeatMs: number;
}

/** DEFAULT_TUNING: table baton_leases, pool 4, connect 5 s, statement 5 s, query 6 s, listen on, heartbeat 5 s. */
export const DEFAULT_TUNING: Readonly<PostgresTuning> = Object.freeze({
  table: 'baton_leases',
  poolMax: 4,
  connectTimeoutMs: 5_000,
  statementTimeoutMs: 5_000,
  queryTimeoutMs: 6_000,
  listen: true,
  heartbeatMs: 5_000,
});

/** Derived names are `<table>_terms` etc.; 48 characters leaves room within Postgres' 63. */
const TABLE_NAME = /^[a-z_][a-z0-9_]{0,47}$/;
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** validateTableName checks a table name: 1–48 of [a-z0-9_], not starting with a digit. */
export function validateTableName(name: unknown): string {
  if (typeof name !== 'string' || !TABLE_NAME.test(name)) {
    throw new InvalidConfigError(`postgres: table "${String(name)}" must be 1–48 characters of a-z, 0-9 and _, not starting with a digit`);
  }
  return name;
}

/** validateSchemaName checks a schema name: 1–63 of [a-z0-9_], not starting with a digit. */
export function validateSchemaName(name: unknown): string {
  if (typeof name !== 'string' || !SCHEMA_NAME.test(name)) {
    throw new InvalidConfigError(`postgres: schema "${String(name)}" must be 1–63 characters of a-z, 0-9 and _, not starting with a digit`);
  }
  return name;
}

/** Query parameters node-postgres understands; they stay in the connection string. */
const DRIVER_PARAMS = new Set([
  'host', 'port', 'user', 'password', 'db', 'encoding', 'client_encoding', 'application_name', 'fallback_application_name',
  'options', 'ssl', 'sslmode', 'sslcert', 'sslkey', 'sslrootcert', 'sslnegotiation', 'uselibpqcompat',
]);

/** The query parameters baton reads, and how each is parsed. */
const BATON_PARAMS: Record<string, (value: string, tuning: Partial<PostgresTuning>) => void> = {
  table: (v, t) => void (t.table = validateTableName(v)),
  schema: (v, t) => void (t.schema = validateSchemaName(v)),
  pool_max: (v, t) => void (t.poolMax = positiveInt(v, 'pool_max', 1000)),
  // libpq counts connect_timeout in seconds; a unit ("500ms") is accepted too.
  connect_timeout: (v, t) => void (t.connectTimeoutMs = timeout(v, 'connect_timeout', 1000)),
  // Postgres counts statement_timeout in milliseconds; 0 sends nothing (e.g. behind a pooler that rejects it).
  statement_timeout: (v, t) => void (t.statementTimeoutMs = timeout(v, 'statement_timeout', 1, true)),
  query_timeout: (v, t) => void (t.queryTimeoutMs = timeout(v, 'query_timeout', 1)),
  listen: (v, t) => void (t.listen = bool(v, 'listen')),
  heartbeat: (v, t) => void (t.heartbeatMs = timeout(v, 'heartbeat', 1)),
};

/** ParsedPostgresUrl is a store URL split into the driver's connection string and baton's tuning. */
export interface ParsedPostgresUrl {
  connectionString: string;
  tuning: PostgresTuning;
}

/**
 * parsePostgresUrl reads `postgres://user:pass@host:port/db?table=…&schema=…` (also
 * `postgresql://`). Baton's own query parameters are removed from the connection string; the
 * driver's (sslmode, application_name, …) stay. Unknown parameters are an InvalidConfigError.
 * Defined values in `overrides` (options given in code) win over the URL's.
 */
export function parsePostgresUrl(url: URL | string, overrides: Partial<PostgresTuning> = {}, env: NodeJS.ProcessEnv = process.env): ParsedPostgresUrl {
  let u: URL;
  try {
    u = new URL(String(url));
  } catch {
    throw new InvalidConfigError(`postgres: "${redactUrl(String(url))}" is not a valid URL`);
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
    throw new InvalidConfigError(`postgres: "${redactUrl(u.href)}" must start with postgres:// or postgresql://`);
  }
  // Without a host the driver would quietly try localhost: a URL that names no server is a mistake.
  if (u.hostname === '' && !u.searchParams.get('host') && !env.PGHOST) {
    throw new InvalidConfigError(`postgres: "${redactUrl(u.href)}" names no host (expected postgres://user@host:5432/db; a Unix socket: ?host=/var/run/postgresql)`);
  }
  const partial: Partial<PostgresTuning> = {};
  for (const [key, value] of [...u.searchParams]) {
    const apply = BATON_PARAMS[key];
    if (apply) {
      apply(value, partial);
      u.searchParams.delete(key);
    } else if (!DRIVER_PARAMS.has(key)) {
      throw new InvalidConfigError(
        `postgres: unknown URL option "${key}" (baton's: ${Object.keys(BATON_PARAMS).join(', ')}; the driver's: ${[...DRIVER_PARAMS].join(', ')})`,
      );
    }
  }
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) (partial as Record<string, unknown>)[k] = v;
  return { connectionString: u.href, tuning: resolveTuning(partial) };
}

/**
 * resolveTuning fills defaults and validates. Without an explicit query timeout it is the
 * statement timeout plus 1 s, so the server's clean error normally arrives first.
 */
export function resolveTuning(partial: Partial<PostgresTuning> = {}): PostgresTuning {
  const t: PostgresTuning = { ...DEFAULT_TUNING };
  for (const [k, v] of Object.entries(partial)) if (v !== undefined) (t as unknown as Record<string, unknown>)[k] = v;
  if (partial.queryTimeoutMs === undefined && t.statementTimeoutMs > 0) t.queryTimeoutMs = t.statementTimeoutMs + 1000;
  validateTableName(t.table);
  if (t.schema !== undefined) validateSchemaName(t.schema);
  for (const key of ['poolMax', 'connectTimeoutMs', 'queryTimeoutMs', 'heartbeatMs'] as const) {
    if (!Number.isInteger(t[key]) || t[key] <= 0) throw new InvalidConfigError(`postgres: ${key} must be a positive integer, got ${String(t[key])}`);
  }
  if (!Number.isInteger(t.statementTimeoutMs) || t.statementTimeoutMs < 0) {
    throw new InvalidConfigError(`postgres: statementTimeoutMs must be 0 or a positive integer, got ${String(t.statementTimeoutMs)}`);
  }
  if (t.statementTimeoutMs > 0 && t.queryTimeoutMs < t.statementTimeoutMs) {
    // Otherwise the client would abandon connections the server was about to answer with a clean error.
    throw new InvalidConfigError(`postgres: query_timeout (${t.queryTimeoutMs}ms) must not be shorter than statement_timeout (${t.statementTimeoutMs}ms)`);
  }
  return t;
}

function positiveInt(value: string, what: string, max: number): number {
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > max) throw new InvalidConfigError(`postgres: ${what}="${value}" must be a whole number from 1 to ${max}`);
  return n;
}

/** A bare number is in `unitMs` (the unit libpq / Postgres use for that option); "5s" and "500ms" work too. */
function timeout(value: string, what: string, unitMs: number, zeroAllowed = false): number {
  const ms = /^\d+$/.test(value) ? Number(value) * unitMs : parseDuration(value, `postgres: ${what}`);
  if (!Number.isFinite(ms) || ms > 3_600_000 || (ms === 0 && !zeroAllowed)) {
    throw new InvalidConfigError(`postgres: ${what}="${value}" must be a duration ${zeroAllowed ? 'from 0' : 'above 0'} up to 1h, e.g. 5s`);
  }
  return Math.round(ms);
}

function bool(value: string, what: string): boolean {
  if (/^(1|true|yes|on)$/i.test(value)) return true;
  if (/^(0|false|no|off)$/i.test(value)) return false;
  throw new InvalidConfigError(`postgres: ${what}="${value}" must be true or false`);
}
