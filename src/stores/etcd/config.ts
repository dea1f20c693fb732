import { parseDuration } from '../../core/duration.js';
import { InvalidConfigError } from '../../core/errors.js';
import { redactUrl } from '../kit/url.js';

/** EtcdConnection is where and how to reach etcd, as given by an `etcd://` URL. */
export interface EtcdConnection {
  /** `http://host:port` client URLs (plain gRPC, no TLS). */
  readonly hosts: readonly string[];
  /** etcd user/password authentication, from the URL's user info. */
  readonly auth?: { readonly username: string; readonly password: string };
}

/** EtcdLayoutOptions say where baton's keys live and how long a call may take. */
export interface EtcdLayoutOptions {
  /**
   * Prepended verbatim to every key baton writes. With the default (empty), baton lock `L`
   * keeps its candidates under `L/`, exactly where `etcdctl elect L` keeps its own.
   */
  prefix?: string;
  /** Where ledger entries live, under `prefix`. Default `_baton/ledger/` (no lock name starts with `_`). */
  ledgerPrefix?: string;
  /** Deadline of every etcd call, in ms. Default 2000. */
  callTimeoutMs?: number;
  /**
   * Whether a new leader waits out a predecessor whose lease ended without a release
   * (RevocationGuard): `auto` (default) when the cluster has more than one member.
   */
  revocationGuard?: 'auto' | 'on' | 'off';
}

/** DEFAULT_LEDGER_PREFIX keeps ledger keys apart from candidate keys: lock names start with a letter or digit. */
export const DEFAULT_LEDGER_PREFIX = '_baton/ledger/';
/** DEFAULT_CALL_TIMEOUT_MS bounds each call so a paused server cannot hang the elector. */
export const DEFAULT_CALL_TIMEOUT_MS = 2000;
/** DEFAULT_PORT is etcd's client port. */
export const DEFAULT_PORT = 2379;

const URL_SHAPE = /^etcd:\/\/(?:([^@/?#]*)@)?([^/?#]*)(\/[^?#]*)?(?:\?([^#]*))?(?:#.*)?$/i;
const KNOWN_PARAMS = ['prefix', 'ledgerPrefix', 'timeout', 'endpoints', 'revocationGuard'];

/**
 * parseEtcdUrl reads `etcd://[user:password@]host[:port][,host[:port]…][/][?prefix=…&ledgerPrefix=…&timeout=2s&endpoints=h:p,…&revocationGuard=auto|on|off]`.
 *
 * Several endpoints may be listed in the authority (`etcd://h1:2379,h2:2379`) when the URL is
 * given as text; a WHATWG `URL` object cannot hold such an authority, so `?endpoints=` names
 * the extra ones there. The port defaults to 2379. TLS is not configured through the URL: pass
 * an `Etcd3` client built with `credentials` to `EtcdStore` instead. Throws InvalidConfigError
 * with a one-line reason.
 */
export function parseEtcdUrl(input: URL | string): { connection: EtcdConnection; layout: EtcdLayoutOptions } {
  const text = typeof input === 'string' ? input.trim() : input.href;
  const m = URL_SHAPE.exec(text);
  if (!m) throw new InvalidConfigError(`store: "${redactUrl(text)}" is not an etcd URL (expected etcd://host:port[,host:port…][?prefix=…])`);
  const [, userinfo, authority = '', path = '', query = ''] = m;
  if (path !== '' && path !== '/') {
    throw new InvalidConfigError(`store: etcd URL path "${path}" is not used; put a key prefix in ?prefix=`);
  }
  const params = new URLSearchParams(query);
  for (const name of params.keys()) {
    if (!KNOWN_PARAMS.includes(name)) {
      throw new InvalidConfigError(`store: unknown etcd URL parameter "${name}" (known: ${KNOWN_PARAMS.join(', ')})`);
    }
  }
  const endpoints = [authority, params.get('endpoints') ?? ''].join(',').split(',').map((h) => h.trim()).filter(Boolean);
  if (endpoints.length === 0) throw new InvalidConfigError('store: the etcd URL names no host (expected etcd://host:port)');
  const layout: EtcdLayoutOptions = {};
  const prefix = params.get('prefix');
  if (prefix !== null) layout.prefix = prefix;
  const ledgerPrefix = params.get('ledgerPrefix');
  if (ledgerPrefix !== null) {
    if (ledgerPrefix === '') throw new InvalidConfigError('store: etcd ?ledgerPrefix= must not be empty');
    layout.ledgerPrefix = ledgerPrefix;
  }
  const timeout = params.get('timeout');
  if (timeout !== null) {
    layout.callTimeoutMs = parseDuration(timeout, 'store: etcd ?timeout=');
    if (layout.callTimeoutMs < 50) throw new InvalidConfigError(`store: etcd ?timeout=${timeout} is too short (at least 50ms)`);
  }
  const guard = params.get('revocationGuard');
  if (guard !== null) {
    if (guard !== 'auto' && guard !== 'on' && guard !== 'off') throw new InvalidConfigError(`store: etcd ?revocationGuard=${guard} is not auto, on or off`);
    layout.revocationGuard = guard;
  }
  return { connection: { hosts: endpoints.map(toHost), auth: parseUserinfo(userinfo) }, layout };
}

function toHost(endpoint: string): string {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\[\]]+)(?::(\d*))?$/.exec(endpoint);
  if (!m) throw new InvalidConfigError(`store: etcd endpoint "${endpoint}" is not host[:port]`);
  const port = m[2] ? Number(m[2]) : DEFAULT_PORT;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new InvalidConfigError(`store: etcd endpoint "${endpoint}" has an invalid port (1–65535)`);
  }
  return `http://${m[1]}:${port}`;
}

function parseUserinfo(userinfo: string | undefined): EtcdConnection['auth'] {
  if (userinfo === undefined || userinfo === '') return undefined;
  const colon = userinfo.indexOf(':');
  if (colon < 0) throw new InvalidConfigError('store: etcd URL user info needs a password (etcd://user:password@host)');
  try {
    return { username: decodeURIComponent(userinfo.slice(0, colon)), password: decodeURIComponent(userinfo.slice(colon + 1)) };
  } catch {
    throw new InvalidConfigError('store: etcd URL user info is not valid percent-encoding');
  }
}
