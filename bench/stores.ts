/**
 * The stores the bench measures, as one table: a store added to STORE_KINDS (with a server in
 * infra/servers/ and a counter in counters.ts) is measured by every measurement and
 * appears in every report table without further changes. A kind whose URL scheme is not
 * registered in src/stores/registry.ts is skipped with a note.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { AzuriteServer, DynaliteServer, EtcdServer, KubeApiServer, type ManagedServer, MariaDBServer, MotoServer, MOTO_VERSION, NatsServer, PostgresServer, RedisServer, ZooKeeperServer } from '../infra/servers/index.js';
import { registeredStores } from '../src/stores/registry.js';
import { kubeVersions } from '../infra/kube/binaries.js';
import { azuriteCounter, dynaliteCounter, dynamoProxyCounter, etcdCounter, k8sCounter, mysqlCounter, natsCounter, postgresCounter, redisCounter, type ServerCounter, zooKeeperCounter } from './counters.js';

/** BenchStore is a running store the measurements use. */
export interface BenchStore {
  readonly name: string;
  /** The store URL baton opens. */
  readonly url: string;
  /** The server's own endpoint for peers (redis://… for Redis, http://… for etcd). */
  readonly endpoint?: string;
  /** "redis 7.0.15" etc. */
  readonly serverVersion: string;
  /** Server-side request counters; absent for SQLite (no server: calls are counted in-process). */
  readonly counter?: ServerCounter;
  /** A URL for a client the counter can attribute separately (PostgreSQL: its own role). */
  roleUrl?(role: string): Promise<string>;
  stop(): Promise<void>;
}

/** StoreKind is one row of STORE_KINDS. */
export interface StoreKind {
  readonly name: string;
  /** URL scheme, which must be registered in src/stores/registry.ts. */
  readonly scheme: string;
  /** Whether the store notifies standbys (the idle-standby target is 0 requests/s then). */
  readonly notifies: boolean;
  /** The most leases the scale measurement holds on it (a fake server that cannot carry more), with why. */
  readonly scaleLimit?: { leases: number; why: string };
  start(dir: string): Promise<BenchStore>;
  /** A URL the store's parser accepts without any environment. Default `<scheme>://127.0.0.1:1`. */
  readonly probeUrl?: string;
}

/** STORE_KINDS lists every store the bench runs, in report order. */
export const STORE_KINDS: readonly StoreKind[] = Object.freeze([
  { name: 'sqlite', scheme: 'sqlite', notifies: true, start: startSqlite },
  { name: 'postgres', scheme: 'postgres', notifies: true, start: startPostgres },
  { name: 'redis', scheme: 'redis', notifies: true, start: startRedis },
  { name: 'etcd', scheme: 'etcd', notifies: true, start: startEtcd },
  // No change feed: standbys poll one consistent GetItem per retry period.
  // On dynalite, which has no TransactWriteItems: the store renews one PutItem per lease there.
  { name: 'dynamodb', scheme: 'dynamodb', notifies: false, start: startDynalite },
  // On moto, which has TransactWriteItems: renewals in transactions of up to 100 leases (the
  // default), and the same server with ?batch=off (one PutItem per lease) beside it.
  { name: 'dynamodb-moto', scheme: 'dynamodb', notifies: false, start: (dir: string) => startMoto(dir, 'transact') },
  { name: 'dynamodb-moto-off', scheme: 'dynamodb', notifies: false, start: (dir: string) => startMoto(dir, 'off') },
  // No change notification in Blob Storage: standbys poll.
  { name: 'azblob', scheme: 'azblob', notifies: false, start: startAzurite, probeUrl: 'azblob://account/container' },
  { name: 'nats', scheme: 'nats', notifies: true, start: startNats },
  { name: 'mysql', scheme: 'mysql', notifies: false, start: startMysql },
  // A real kube-apiserver (v1.36, infra/servers/kube-apiserver.ts) over its own etcd 3.6.
  { name: 'k8s', scheme: 'k8s', notifies: true, start: startKubeApiServer },
  { name: 'zookeeper', scheme: 'zk', notifies: true, start: startZooKeeper },
]);

/** isRegistered tells whether baton can open this kind (its scheme is in the store registry). */
export function isRegistered(kind: StoreKind): boolean {
  // By scheme, not by parsing a sample URL: some stores' URLs need more than a host (mysql: a database).
  return registeredStores().some((d) => d.schemes.includes(kind.scheme));
}

async function startSqlite(dir: string): Promise<BenchStore> {
  const Sqlite = createRequire(import.meta.url)('better-sqlite3') as new (path: string) => {
    prepare(sql: string): { pluck(): { get(): unknown } };
    close(): void;
  };
  const db = new Sqlite(':memory:');
  const version = String(db.prepare('SELECT sqlite_version()').pluck().get());
  db.close();
  return { name: 'sqlite', url: `sqlite:${join(dir, 'bench.db')}`, serverVersion: `SQLite ${version} (better-sqlite3, WAL, synchronous=FULL)`, stop: async () => {} };
}

async function startPostgres(): Promise<BenchStore> {
  const server = await started(new PostgresServer());
  const counter = await postgresCounter(server.url);
  const pg = createRequire(import.meta.url)('pg') as typeof import('pg');
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  const version = (await admin.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]!.v;
  const roles = new Set<string>();
  return {
    name: 'postgres',
    url: server.url,
    serverVersion: `PostgreSQL ${version}`,
    counter,
    async roleUrl(role) {
      if (!/^[a-z_]+$/.test(role)) throw new Error(`bench: bad role name ${role}`);
      // A superuser, so the store's idempotent CREATE … IF NOT EXISTS passes as it would for its owner.
      if (!roles.has(role)) await admin.query(`CREATE ROLE ${role} SUPERUSER LOGIN`);
      roles.add(role);
      const u = new URL(server.url);
      u.username = role;
      return u.toString();
    },
    async stop() {
      await counter.close();
      await admin.end();
      await server.stop();
    },
  };
}

async function startRedis(): Promise<BenchStore> {
  const server = await started(new RedisServer());
  const counter = await redisCounter(server.url);
  const { Redis } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
  const probe = new Redis(server.url);
  const info = await probe.info('server');
  probe.disconnect();
  return {
    name: 'redis',
    url: server.url,
    endpoint: server.url,
    serverVersion: `Redis ${/redis_version:(\S+)/.exec(info)?.[1] ?? '?'} (appendfsync always)`,
    counter,
    async stop() {
      await counter.close();
      await server.stop();
    },
  };
}

async function startEtcd(): Promise<BenchStore> {
  const server = await started(new EtcdServer());
  const version = ((await (await fetch(`${server.endpoint}/version`)).json()) as { etcdserver?: string }).etcdserver ?? '?';
  const counter = await etcdCounter(server.endpoint);
  return {
    name: 'etcd',
    url: server.url,
    endpoint: server.endpoint,
    serverVersion: `etcd ${version} (single member)`,
    counter,
    async stop() {
      await counter.close();
      await server.stop();
    },
  };
}

/**
 * startAzurite: baton and the peers reach azurite through the counting proxy (`?endpoint=`); the
 * connection string is exported for the bench's child processes.
 */
async function startAzurite(): Promise<BenchStore> {
  const server = await started(new AzuriteServer());
  const counter = await azuriteCounter(server.port);
  process.env.AZURE_STORAGE_CONNECTION_STRING = server.connectionString;
  const endpoint = `http://127.0.0.1:${counter.port}/devstoreaccount1`;
  const { version } = createRequire(import.meta.url)('azurite/package.json') as { version: string };
  return {
    name: 'azblob',
    url: `azblob://bench?endpoint=${encodeURIComponent(endpoint)}`,
    serverVersion: `azurite ${version} (blob service)`,
    counter,
    async stop() {
      await counter.close();
      await server.stop();
    },
  };
}

async function startZooKeeper(): Promise<BenchStore> {
  const server = await started(new ZooKeeperServer());
  const counter = await zooKeeperCounter(server.port);
  return {
    name: 'zookeeper',
    url: server.url('/bench'),
    endpoint: server.connectString,
    serverVersion: 'ZooKeeper 3.8.0 (standalone, tick 200 ms)',
    counter,
    async stop() {
      await counter.close();
      await server.stop();
    },
  };
}

async function started<T extends ManagedServer>(server: T): Promise<T> {
  await server.start();
  return server;
}

async function startNats(): Promise<BenchStore> {
  const server = await started(new NatsServer());
  const varz = await server.varz();
  const monitor = `http://127.0.0.1:${server.monitorPort}`;
  const counter = await natsCounter(monitor);
  return {
    name: 'nats',
    url: server.url,
    serverVersion: `nats-server ${String(varz.version ?? '?')} (JetStream, file storage, single server)`,
    counter,
    async stop() {
      await counter.close();
      await server.stop();
    },
  };
}

async function startMysql(): Promise<BenchStore> {
  const server = await started(new MariaDBServer());
  const counter = await mysqlCounter(server.url);
  return {
    name: 'mysql',
    url: server.url,
    serverVersion: `MariaDB ${server.sql('SELECT VERSION()').trim()} (InnoDB, private instance)`,
    counter,
    async stop() {
      await counter.close();
      await server.stop();
    },
  };
}

/** LOOPBACK_AWS_ENV keeps the SDK (in this process and the bench's children) on loopback. */
const LOOPBACK_AWS_ENV = {
  AWS_ACCESS_KEY_ID: 'baton-bench',
  AWS_SECRET_ACCESS_KEY: 'baton-bench',
  AWS_EC2_METADATA_DISABLED: 'true',
  AWS_CONFIG_FILE: '/nonexistent/baton-aws-config',
  AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/baton-aws-credentials',
} as const;

async function startDynalite(): Promise<BenchStore> {
  Object.assign(process.env, LOOPBACK_AWS_ENV);
  const server = await started(new DynaliteServer());
  const version = String((createRequire(import.meta.url)('dynalite/package.json') as { version: string }).version);
  const counter = await dynaliteCounter(server.statsUrl);
  return {
    name: 'dynamodb',
    url: server.url('baton'),
    endpoint: server.endpoint,
    serverVersion: `dynalite ${version} (DynamoDB API on LevelDB; stands in for DynamoDB)`,
    counter,
    async stop() {
      await counter.close();
      await server.stop();
    },
  };
}

/** startMoto: a moto server behind a counting proxy (moto counts nothing itself); `batch` is the store URL's batch mode. */
async function startMoto(_dir: string, batch: 'transact' | 'off'): Promise<BenchStore> {
  Object.assign(process.env, LOOPBACK_AWS_ENV);
  const server = await started(new MotoServer());
  const counter = await dynamoProxyCounter(server.port, 'moto');
  const endpoint = `http://127.0.0.1:${counter.port}`;
  return {
    name: batch === 'off' ? 'dynamodb-moto-off' : 'dynamodb-moto',
    url: `dynamodb://baton?endpoint=${encodeURIComponent(endpoint)}&region=us-east-1${batch === 'off' ? '&batch=off' : ''}`,
    endpoint,
    serverVersion: `moto ${MOTO_VERSION} (DynamoDB API in memory, one Python process; behind a counting proxy; batch=${batch})`,
    counter,
    async stop() {
      await counter.close();
      await server.stop();
    },
  };
}

async function startKubeApiServer(): Promise<BenchStore> {
  // Counted from apiserver_request_total: an audit log line per request would load the server.
  const server = await started(new KubeApiServer({ audit: false }));
  const counter = await k8sCounter(() => server.requestTotals());
  const v = kubeVersions();
  return {
    name: 'k8s',
    url: server.url(),
    serverVersion: `kube-apiserver ${v.kube} over etcd ${v.etcd} (built from the Go modules by infra/kube/build.sh; default limits: --max-requests-inflight 400, --max-mutating-requests-inflight 200, API Priority and Fairness on)`,
    counter,
    async stop() {
      await counter.close();
      await server.stop();
    },
  };
}
