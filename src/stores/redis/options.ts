import { InvalidConfigError } from '../../core/errors.js';
import { parseDuration } from '../../core/duration.js';
import { redactUrl } from '../kit/url.js';
import type { RedisOptions } from 'ioredis';

/** DEFAULT_PREFIX is put in front of every key and channel baton uses. */
export const DEFAULT_PREFIX = 'baton:';

/** DEFAULT_TIMEOUT_MS bounds every command: a frozen or unreachable server fails fast. */
export const DEFAULT_TIMEOUT_MS = 2_000;

/** RedisConnection is what a `redis://` / `rediss://` URL says. */
export interface RedisConnection {
  host: string;
  port: number;
  username?: string;
  password?: string;
  db: number;
  tls: boolean;
  prefix: string;
  timeoutMs: number;
  /** The URL with the password hidden, for messages. */
  label: string;
}

const KNOWN_PARAMS = ['prefix', 'timeout'];

/**
 * parseRedisUrl reads `redis[s]://[[user]:password@]host[:port][/db][?prefix=baton:&timeout=2s]`.
 * Defaults: port 6379, db 0, prefix `baton:`, timeout 2s. Throws InvalidConfigError naming the
 * offending part.
 */
export function parseRedisUrl(url: URL): RedisConnection {
  const scheme = url.protocol.slice(0, -1).toLowerCase();
  const label = redactUrl(url.href);
  if (scheme !== 'redis' && scheme !== 'rediss') throw new InvalidConfigError(`redis: "${label}" is not a redis:// or rediss:// URL`);
  if (!url.hostname) throw new InvalidConfigError(`redis: "${label}" names no host (expected redis://host:port)`);
  for (const key of url.searchParams.keys()) {
    if (!KNOWN_PARAMS.includes(key)) throw new InvalidConfigError(`redis: unknown URL option "${key}" (known: ${KNOWN_PARAMS.join(', ')})`);
  }
  const port = url.port === '' ? 6379 : Number(url.port);
  const dbText = url.pathname.replace(/^\/+|\/+$/g, '');
  if (dbText !== '' && !/^\d{1,5}$/.test(dbText)) {
    throw new InvalidConfigError(`redis: database "${dbText}" in "${label}" must be a number, e.g. redis://host:6379/0`);
  }
  const timeoutText = url.searchParams.get('timeout');
  const timeoutMs = timeoutText === null ? DEFAULT_TIMEOUT_MS : parseDuration(timeoutText, 'redis: timeout');
  if (timeoutMs < 1) throw new InvalidConfigError('redis: timeout must be at least 1ms');
  const prefix = url.searchParams.get('prefix') ?? DEFAULT_PREFIX;
  return {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port,
    username: url.username ? decodeURIComponent(url.username) : undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    db: dbText === '' ? 0 : Number(dbText),
    tls: scheme === 'rediss',
    prefix: checkPrefix(prefix),
    timeoutMs,
    label,
  };
}

/** checkPrefix accepts any prefix without glob characters (list and ledger SCAN with it). */
export function checkPrefix(prefix: string): string {
  if (typeof prefix !== 'string' || prefix.length > 100 || /[*?[\]\\\s]/.test(prefix)) {
    throw new InvalidConfigError(`redis: prefix "${String(prefix)}" must be at most 100 characters without spaces or * ? [ ] \\`);
  }
  return prefix;
}

/**
 * clientOptions are the ioredis settings baton uses for the connections it opens itself. Each
 * one is chosen so that a dead or frozen server turns into a prompt error, never a hang, and
 * so that no write is ever replayed behind the elector's back:
 *
 * - `enableOfflineQueue: false` — while disconnected a command fails at once instead of
 *   waiting in a queue; the elector retries on its own schedule, with fresh arguments.
 * - `maxRetriesPerRequest: 0` and `autoResendUnfulfilledCommands: false` — a command in flight
 *   when the connection drops is failed, not re-sent after the reconnect: its outcome is
 *   unknown, and a compare-and-set replayed later could only confuse (it is safe, but late).
 * - `commandTimeout` — a server that accepts bytes but never answers (SIGSTOP, a full disk
 *   with `appendfsync always`) fails the command after the timeout. The store also races every
 *   call against the same timeout, for clients the application passes in.
 * - `retryStrategy` — reconnect forever, backing off to at most 1 s, so a restarted server is
 *   used again within a second.
 * - `lazyConnect: true` — `RedisStore.open` connects explicitly and reports failure at once.
 */
export function clientOptions(c: RedisConnection): RedisOptions {
  return {
    host: c.host,
    port: c.port,
    username: c.username,
    password: c.password,
    db: c.db,
    tls: c.tls ? { servername: c.host } : undefined,
    connectTimeout: Math.max(c.timeoutMs, 1_000),
    commandTimeout: c.timeoutMs,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    retryStrategy: reconnectDelay,
    lazyConnect: true,
    connectionName: 'baton',
  };
}

/** reconnectDelay backs off 50 ms, 100 ms, 200 ms … up to 1 s, and never gives up. */
export function reconnectDelay(attempt: number): number {
  return Math.min(50 * 2 ** Math.min(attempt, 5), 1_000);
}
