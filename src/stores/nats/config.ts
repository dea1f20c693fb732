/**
 * What a `nats://` URL says: the servers, the credentials, the KV bucket and the call timeout.
 * Pure: parsing opens no connection and creates nothing.
 *
 *   nats://[user:pass@ | token@]host[:port][,host[:port]…][?bucket=baton&timeout=2s&replicas=1]
 */
import { InvalidConfigError } from '../../core/errors.js';
import { parseDuration } from '../../core/duration.js';
import { checkQueryOptions, parseMultiHostUrl, redactUrl, type HostPort } from '../kit/url.js';

/** DEFAULT_BUCKET is the KV bucket baton uses when the URL names none. */
export const DEFAULT_BUCKET = 'baton';
/** DEFAULT_TIMEOUT_MS bounds every call: a frozen or unreachable server fails fast. */
export const DEFAULT_TIMEOUT_MS = 2_000;
/** DEFAULT_PORT is NATS's client port. */
export const DEFAULT_PORT = 4222;

/** NatsConfig is a checked `nats://` URL. */
export interface NatsConfig {
  readonly servers: readonly HostPort[];
  readonly user?: string;
  readonly pass?: string;
  /** A user part without a password is a token, as in the NATS tools' URLs. */
  readonly token?: string;
  /** KV bucket name: 1–64 of [A-Za-z0-9_-]. Default `baton`. */
  readonly bucket: string;
  /** Per-call limit (and connect limit). Default 2 s. */
  readonly timeoutMs: number;
  /** Replicas of the bucket when baton creates it (1–5). Default 1. */
  readonly replicas: number;
  /** The URL with secrets hidden, for messages. */
  readonly label: string;
}

const KNOWN = ['bucket', 'timeout', 'replicas'];
const BUCKET = /^[A-Za-z0-9_-]{1,64}$/;

/** parseNatsUrl checks a `nats://` URL (see the file comment); InvalidConfigError names the bad part. */
export function parseNatsUrl(text: string): NatsConfig {
  const url = parseMultiHostUrl('nats', text, DEFAULT_PORT);
  const label = redactUrl(text.trim());
  if (url.scheme !== 'nats') throw new InvalidConfigError(`nats: "${label}" is not a nats:// URL`);
  if (url.path !== '' && url.path !== '/') throw new InvalidConfigError(`nats: "${label}" has a path; name the bucket with ?bucket=NAME`);
  checkQueryOptions('nats', url.params, KNOWN);
  const bucket = url.params.get('bucket') ?? DEFAULT_BUCKET;
  if (!BUCKET.test(bucket)) throw new InvalidConfigError(`nats: bucket "${bucket}" must be 1–64 characters of A-Z, a-z, 0-9, _ and -`);
  const timeoutText = url.params.get('timeout');
  const timeoutMs = timeoutText === null ? DEFAULT_TIMEOUT_MS : parseDuration(timeoutText, 'nats: timeout');
  if (!(timeoutMs >= 1)) throw new InvalidConfigError('nats: timeout must be at least 1ms');
  const replicasText = url.params.get('replicas') ?? '1';
  const replicas = Number(replicasText);
  if (!/^[1-5]$/.test(replicasText)) throw new InvalidConfigError(`nats: replicas "${replicasText}" must be 1–5`);
  const hasPass = url.password !== undefined;
  return {
    servers: url.hosts,
    ...(hasPass ? { user: url.username, pass: url.password } : url.username ? { token: url.username } : {}),
    bucket,
    timeoutMs,
    replicas,
    label,
  };
}

/** serverList renders the hosts the way the NATS client takes them (IPv6 in brackets). */
export function serverList(servers: readonly HostPort[]): string[] {
  return servers.map((s) => (s.host.includes(':') ? `[${s.host}]:${s.port}` : `${s.host}:${s.port}`));
}
