/**
 * The store registry: which URL scheme opens which store. The built-in stores are listed once,
 * below; a store shipped outside this package joins with `registerStore(descriptor)`.
 *
 * Descriptors are light (no SDK import); a store's implementation and its SDK load only when
 * `openStore` opens it, so `import 'baton'` never pulls in pg, ioredis or etcd3.
 */
import { InvalidConfigError } from '../core/errors.js';
import type { LeaseStore } from '../core/store.js';
import type { StoreDescriptor, StoreOpenOptions } from '../core/store-descriptor.js';
import { dynamodbStore } from './dynamodb/descriptor.js';
import { azblobStore } from './azblob/descriptor.js';
import { etcdStore } from './etcd/descriptor.js';
import { k8sStore } from './k8s/descriptor.js';
import { redactUrl } from './kit/url.js';
import { memoryStore } from './memory/descriptor.js';
import { mysqlStore } from './mysql/descriptor.js';
import { natsStore } from './nats/descriptor.js';
import { postgresStore } from './postgres/descriptor.js';
import { redisStore } from './redis/descriptor.js';
import { defaultStorePath, sqliteStore } from './sqlite/descriptor.js';
import { zooKeeperStore } from './zookeeper/descriptor.js';

/** BUILT_IN_STORES: one line per store that ships with baton. */
const BUILT_IN_STORES: readonly StoreDescriptor<any>[] = [memoryStore, sqliteStore, postgresStore, redisStore, etcdStore, k8sStore, azblobStore, natsStore, mysqlStore, dynamodbStore, zooKeeperStore];


const bySchemes = new Map<string, StoreDescriptor<any>>();
for (const d of BUILT_IN_STORES) add(d);

function add(descriptor: StoreDescriptor<any>): void {
  for (const s of descriptor.schemes) bySchemes.set(s.toLowerCase(), descriptor);
}

/**
 * registerStore adds a store written outside this package (or replaces the one registered for
 * the same schemes). The descriptor is checked for shape; its schemes are matched case-insensitively.
 */
export function registerStore(descriptor: StoreDescriptor<any>): void {
  if (!descriptor || typeof descriptor.name !== 'string' || !Array.isArray(descriptor.schemes) || descriptor.schemes.length === 0) {
    throw new InvalidConfigError('registerStore: a descriptor needs a name and at least one scheme');
  }
  if (typeof descriptor.parse !== 'function' || typeof descriptor.open !== 'function') {
    throw new InvalidConfigError(`registerStore: descriptor "${descriptor.name}" needs parse() and open()`);
  }
  for (const s of descriptor.schemes) {
    if (!/^[a-z][a-z0-9+.-]*$/i.test(s)) throw new InvalidConfigError(`registerStore: "${s}" is not a URL scheme`);
  }
  add(descriptor);
}

/** registeredStores lists every descriptor known now (built-in and registered), one per name. */
export function registeredStores(): StoreDescriptor<any>[] {
  return [...new Map([...bySchemes.values()].map((d) => [d.name, d])).values()];
}

/** defaultStoreUrl is BATON_STORE, else the embedded SQLite file at defaultStorePath(). */
export function defaultStoreUrl(env: NodeJS.ProcessEnv = process.env): string {
  return env.BATON_STORE?.trim() || `sqlite:${defaultStorePath(env)}`;
}

/** ParsedStoreUrl is a checked store URL: which store, and what its `open` needs. */
export interface ParsedStoreUrl {
  readonly scheme: string;
  readonly descriptor: StoreDescriptor<any>;
  readonly config: unknown;
  /** The URL with secrets hidden, for messages. */
  readonly label: string;
}

/**
 * parseStoreUrl checks a store URL without touching anything (no connection, no file): the
 * scheme must be registered and the store's own `parse` must accept the rest. Throws
 * InvalidConfigError with a one-line reason.
 */
export function parseStoreUrl(text: string, options: StoreOpenOptions = {}): ParsedStoreUrl {
  if (typeof text !== 'string' || text.trim() === '') throw new InvalidConfigError('store: the store URL is empty');
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(text.trim());
  const label = redactUrl(text.trim());
  if (!m) throw new InvalidConfigError(`store: "${label}" is not a store URL (expected e.g. sqlite:PATH, postgres://…, redis://…, memory:)`);
  const scheme = m[1]!.toLowerCase();
  const descriptor = bySchemes.get(scheme);
  if (!descriptor) {
    throw new InvalidConfigError(`store: scheme "${scheme}:" is not a known store (available: ${[...bySchemes.keys()].sort().join(', ')})`);
  }
  const env = options.env ?? process.env;
  return { scheme, descriptor, config: descriptor.parse(text.trim(), { ...options, env }), label };
}

/** openStore opens the store a URL names (default: defaultStoreUrl()). */
export async function openStore(text?: string, options: StoreOpenOptions = {}): Promise<LeaseStore> {
  const env = options.env ?? process.env;
  const parsed = parseStoreUrl(text ?? defaultStoreUrl(env), { ...options, env });
  return parsed.descriptor.open(parsed.config, { ...options, env });
}

export { redactUrl, defaultStorePath };
