/**
 * URL helpers every store's descriptor uses: redaction for messages, query options checked
 * against a known list, and multi-host authorities (`scheme://h1:p1,h2:p2/…`), which a WHATWG
 * URL cannot hold.
 */
import { InvalidConfigError } from '../../core/errors.js';

/** redactUrl hides a password in a URL (user info or a secret-looking query option) so it can be printed. */
export function redactUrl(text: string): string {
  return String(text)
    .replace(/^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^:@/]*):[^@/]*@/, '$1:***@')
    .replace(/([?&](password|pass|secret|token|key|sig|accountkey)=)[^&]*/gi, '$1***');
}

/** checkQueryOptions refuses any query option of `params` not in `known`, naming the store. */
export function checkQueryOptions(store: string, params: URLSearchParams, known: readonly string[]): void {
  for (const name of params.keys()) {
    if (!known.includes(name)) {
      const list = known.length ? known.join(', ') : 'none';
      throw new InvalidConfigError(`${store}: unknown URL option "${name}" (known: ${list})`);
    }
  }
}

/** HostPort is one `host:port` of a multi-host URL. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** MultiHostUrl is a `scheme://[user[:pass]@]h1[:p1][,h2[:p2]…][/path][?query]` URL taken apart. */
export interface MultiHostUrl {
  readonly scheme: string;
  readonly username?: string;
  readonly password?: string;
  readonly hosts: readonly HostPort[];
  /** The path after the authority, '' or starting with '/', percent-decoded. */
  readonly path: string;
  readonly params: URLSearchParams;
}

const MULTI_HOST = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/(?:([^@/?#]*)@)?([^/?#]*)(\/[^?#]*)?(?:\?([^#]*))?(?:#.*)?$/;

/**
 * parseMultiHostUrl reads a URL whose authority may list several hosts. `defaultPort` fills in
 * a missing port; a host list that is empty, or a port that is not 1–65535, is an
 * InvalidConfigError naming the store.
 */
export function parseMultiHostUrl(store: string, text: string, defaultPort: number): MultiHostUrl {
  const m = MULTI_HOST.exec(text.trim());
  if (!m) throw new InvalidConfigError(`${store}: "${redactUrl(text)}" is not a valid URL (expected ${store}://host:port[,host:port…])`);
  const [, scheme, userinfo, authority = '', rawPath = '', query = ''] = m;
  const hosts = authority
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean)
    .map((h) => parseHostPort(store, h, defaultPort));
  if (hosts.length === 0) throw new InvalidConfigError(`${store}: the URL names no host (expected ${store}://host:port)`);
  let username: string | undefined;
  let password: string | undefined;
  if (userinfo !== undefined) {
    const i = userinfo.indexOf(':');
    username = decode(store, i < 0 ? userinfo : userinfo.slice(0, i));
    password = i < 0 ? undefined : decode(store, userinfo.slice(i + 1));
  }
  return { scheme: scheme!.toLowerCase(), username, password, hosts, path: decode(store, rawPath), params: new URLSearchParams(query) };
}

function parseHostPort(store: string, text: string, defaultPort: number): HostPort {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d*))?$/.exec(text);
  if (!m) throw new InvalidConfigError(`${store}: "${text}" is not host or host:port`);
  const port = m[2] === undefined || m[2] === '' ? defaultPort : Number(m[2]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new InvalidConfigError(`${store}: port "${m[2]}" of "${text}" is not 1–65535`);
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}

function decode(store: string, text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new InvalidConfigError(`${store}: "${text}" has a broken %-escape`);
  }
}

/** parseSingleUrl parses a one-host URL with WHATWG rules, or throws a one-line InvalidConfigError. */
export function parseSingleUrl(store: string, text: string): URL {
  try {
    return new URL(text.trim());
  } catch {
    throw new InvalidConfigError(`${store}: "${redactUrl(text)}" is not a valid URL`);
  }
}
