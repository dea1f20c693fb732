import { parseDuration } from '../../core/duration.js';
import { InvalidConfigError } from '../../core/errors.js';
import { checkQueryOptions, parseMultiHostUrl } from '../kit/url.js';

/** ZkConfig is what a `zk://` URL says: where the ensemble is, where baton's nodes live, and how long a call may take. */
export interface ZkConfig {
  /** ZooKeeper connect string, `host:port[,host:port…]`. */
  readonly connectString: string;
  /** Root znode: lock `L` keeps its latch at `<root>/L`; baton's own nodes live under `<root>/_baton`. */
  readonly root: string;
  /** Deadline of every ZooKeeper call, in ms. Default 2000. */
  readonly callTimeoutMs: number;
}

/** DEFAULT_ROOT is the root znode when the URL has no path. */
export const DEFAULT_ROOT = '/baton';
/** DEFAULT_CALL_TIMEOUT_MS bounds each call so a frozen member cannot hang the elector. */
export const DEFAULT_CALL_TIMEOUT_MS = 2000;
/** DEFAULT_PORT is ZooKeeper's client port. */
export const DEFAULT_PORT = 2181;

/**
 * parseZkUrl reads `zk://host[:port][,host[:port]…][/PATH][?timeout=2s]` (port 2181 by default,
 * PATH /baton by default). Pure: no I/O. Throws InvalidConfigError with a one-line reason.
 */
export function parseZkUrl(text: string): ZkConfig {
  const url = parseMultiHostUrl('zookeeper', text, DEFAULT_PORT);
  if (url.scheme !== 'zk') throw new InvalidConfigError(`zookeeper: scheme "${url.scheme}:" is not zk:`);
  if (url.username !== undefined) throw new InvalidConfigError('zookeeper: user info in the URL is not supported (pass a client with auth to ZooKeeperStore)');
  checkQueryOptions('zookeeper', url.params, ['timeout']);
  const root = url.path === '' ? DEFAULT_ROOT : url.path;
  checkRoot(root);
  let callTimeoutMs = DEFAULT_CALL_TIMEOUT_MS;
  const timeout = url.params.get('timeout');
  if (timeout !== null) {
    callTimeoutMs = parseDuration(timeout, 'zookeeper: ?timeout=');
    if (callTimeoutMs < 50) throw new InvalidConfigError(`zookeeper: ?timeout=${timeout} is too short (at least 50ms)`);
  }
  const connectString = url.hosts.map((h) => `${h.host.includes(':') ? `[${h.host}]` : h.host}:${h.port}`).join(',');
  return { connectString, root, callTimeoutMs };
}

/** checkRoot refuses a root znode path ZooKeeper would refuse, or one inside ZooKeeper's own `/zookeeper`. */
export function checkRoot(root: string): void {
  if (root === '/' || root.endsWith('/')) throw new InvalidConfigError(`zookeeper: path "${root}" must name a znode below / without a trailing slash (e.g. /baton)`);
  if (!root.startsWith('/')) throw new InvalidConfigError(`zookeeper: path "${root}" must start with /`);
  for (const part of root.slice(1).split('/')) {
    if (part === '' || part === '.' || part === '..' || /[\u0000-\u001f\u007f]/.test(part)) {
      throw new InvalidConfigError(`zookeeper: path "${root}" has an empty, "." or ".." segment or a control character`);
    }
  }
  if (root === '/zookeeper' || root.startsWith('/zookeeper/')) throw new InvalidConfigError(`zookeeper: path "${root}" is inside ZooKeeper's reserved /zookeeper`);
}
