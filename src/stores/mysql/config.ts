/**
 * What a `mysql://` (or `mariadb://`) URL says. Pure: parsing opens no connection.
 *
 *   mysql://user:pass@host[:port]/database[?table=baton_leases&timeout=2s&pool_max=4]
 */
import { InvalidConfigError } from '../../core/errors.js';
import { parseDuration } from '../../core/duration.js';
import { checkQueryOptions, parseSingleUrl, redactUrl } from '../kit/url.js';

/** DEFAULT_TABLE is the table baton keeps its rows in. */
export const DEFAULT_TABLE = 'baton_leases';
/** DEFAULT_TIMEOUT_MS bounds every statement (and connecting). */
export const DEFAULT_TIMEOUT_MS = 2_000;

/** MysqlConfig is a checked `mysql://` URL. */
export interface MysqlConfig {
  readonly host: string;
  readonly port: number;
  readonly user?: string;
  readonly password?: string;
  readonly database: string;
  /** 1–64 of [A-Za-z0-9_], not starting with a digit. Default `baton_leases`. */
  readonly table: string;
  readonly timeoutMs: number;
  /** Connections in the store's own pool. Default 4. */
  readonly poolMax: number;
  /** The URL with the password hidden. */
  readonly label: string;
}

const KNOWN = ['table', 'timeout', 'pool_max'];
const TABLE = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** validateTableName checks a table name (it is spliced into SQL, quoted with backticks). */
export function validateTableName(name: string): string {
  if (!TABLE.test(name)) throw new InvalidConfigError(`mysql: table "${name}" must be 1–64 characters of A-Z, a-z, 0-9 and _, not starting with a digit`);
  return name;
}

/** parseMysqlUrl checks a `mysql://` / `mariadb://` URL; InvalidConfigError names the bad part. */
export function parseMysqlUrl(text: string): MysqlConfig {
  const url = parseSingleUrl('mysql', text);
  const label = redactUrl(text.trim());
  const scheme = url.protocol.slice(0, -1).toLowerCase();
  if (scheme !== 'mysql' && scheme !== 'mariadb') throw new InvalidConfigError(`mysql: "${label}" is not a mysql:// or mariadb:// URL`);
  if (!url.hostname) throw new InvalidConfigError(`mysql: "${label}" names no host (expected mysql://user:pass@host:port/database)`);
  checkQueryOptions('mysql', url.searchParams, KNOWN);
  const port = url.port === '' ? 3306 : Number(url.port);
  const database = safeDecode(url.pathname.replace(/^\/+|\/+$/g, ''));
  if (!database) throw new InvalidConfigError(`mysql: "${label}" names no database (expected mysql://user:pass@host:port/database)`);
  if (database.includes('/') || database.length > 64) throw new InvalidConfigError(`mysql: database "${database}" must be one name of at most 64 characters`);
  const table = validateTableName(url.searchParams.get('table') ?? DEFAULT_TABLE);
  const timeoutText = url.searchParams.get('timeout');
  const timeoutMs = timeoutText === null ? DEFAULT_TIMEOUT_MS : parseDuration(timeoutText, 'mysql: timeout');
  if (!(timeoutMs >= 1)) throw new InvalidConfigError('mysql: timeout must be at least 1ms');
  const poolText = url.searchParams.get('pool_max') ?? '4';
  if (!/^\d{1,4}$/.test(poolText) || Number(poolText) < 1 || Number(poolText) > 1000) throw new InvalidConfigError(`mysql: pool_max "${poolText}" must be 1–1000`);
  return {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port,
    ...(url.username ? { user: safeDecode(url.username) } : {}),
    ...(url.password ? { password: safeDecode(url.password) } : {}),
    database,
    table,
    timeoutMs,
    poolMax: Number(poolText),
    label,
  };
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new InvalidConfigError(`mysql: "${text}" has a broken %-escape`);
  }
}
