/**
 * The store kinds a chaos run can target, and how the harness runs each one's server and
 * breaks it. Adding a store is one entry in STORE_KINDS.
 *
 * Network stores run from infra/servers/ on a free loopback port; their store fault
 * either SIGKILLs the server and starts it again on the same data (`restart`) or freezes it
 * and every process below it with SIGSTOP until SIGCONT (`freeze`). SQLite has no server: its store fault holds an
 * exclusive write transaction on the database file (`lock`), which is what another process
 * hogging the file looks like; and partitions do not apply to it, since candidates reach the
 * file through the local filesystem — there is no network path to cut.
 *
 * Cluster kinds (etcd-cluster, zookeeper-ensemble) run three members on loopback behind one URL
 * that lists them all; their store fault kills or freezes one member at a time (runningCluster),
 * which the store must survive. Candidates reach the members directly: no partitions.
 *
 * Kubernetes runs against a real kube-apiserver over a real etcd 3.6 (infra/servers/kube-apiserver.ts);
 * its store fault restarts or freezes the API server. Its store URL names a kubeconfig, and a
 * kubeconfig names the server's address, so each partition proxy gets its own kubeconfig naming
 * the proxy's port (the server certificate is for IP 127.0.0.1, whatever the port).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AzuriteServer, DynaliteServer, etcdCluster, type EtcdLine, etcdRaftLeader, EtcdServer, KubeApiServer, type ManagedServer, MariaDBServer, NatsServer, PostgresServer, RedisServer, zooKeeperEnsemble, ZooKeeperServer } from '../infra/servers/index.js';
import { registeredStores } from '../src/stores/registry.js';
import { openDatabase, type SqlDatabase } from '../src/stores/sqlite/driver.js';

/** ChaosTiming is the elector timing a run uses: short, so runs see many failovers. */
export interface ChaosTiming {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /**
   * For a store whose standbys learn of changes only by polling: the longest wait between two
   * polls, retry × (1 + jitter). The leaderless-gap bound uses it in place of the retry period.
   */
  pollMs?: number;
  /**
   * For a store whose new leader waits out a predecessor that ended without a release (an etcd
   * cluster's revocation guard, src/stores/etcd/revocation-guard.ts): that wait, a renew
   * deadline. The leaderless-gap bound adds it.
   */
  predecessorWaitMs?: number;
  /**
   * For a queue store (etcd, ZooKeeper): a candidate waits in line, and the call that finds it
   * at the front began while it waited — so a handover is judged from when that call returned.
   */
  queue?: boolean;
}

/** RunningStore is a started store server (or file) the harness can break and mend. */
export interface RunningStore {
  /** The URL candidates open, straight to the store. */
  readonly url: string;
  /** The server's TCP port, for network stores: candidates then go through partition proxies. */
  readonly port?: number;
  /** urlVia is the URL that reaches the store through a proxy listening on `port`. */
  urlVia(port: number): string;
  /** The ways this store can be broken, e.g. ['restart', 'freeze']. */
  readonly faultVariants: readonly string[];
  /** breakStore starts a store fault. */
  breakStore(variant: string): Promise<void>;
  /** mendStore ends it; resolves once the store answers again. */
  mendStore(variant: string): Promise<void>;
  /** stop shuts the server down and removes its data. */
  stop(): Promise<void>;
}

/** ChaosStoreKind is one entry of STORE_KINDS. */
export interface ChaosStoreKind {
  /** The name given to --store. */
  readonly name: string;
  /** The URL scheme, which must be registered in src/stores/registry.ts. */
  readonly scheme: string;
  /** Whether candidates reach it over TCP (partitions apply). */
  readonly network: boolean;
  /** Whether standbys learn of changes only by polling (no notifications): see ChaosTiming.pollMs. */
  readonly polls?: boolean;
  /** Whether it is a queue store (see ChaosTiming.queue). */
  readonly queue?: boolean;
  /** Whether a new leader waits out a predecessor that did not release (see ChaosTiming.predecessorWaitMs). */
  readonly waitsOutPredecessor?: boolean;
  /** Default timing for runs on this store. */
  readonly timing: ChaosTiming;
  /** start runs a fresh server (or file) under `dir`. */
  start(dir: string): Promise<RunningStore>;
  /**
   * startPlaced runs the server on a host of its own (--net netns, infra/netns.ts): listening on
   * `host`, its command run through `wrap`. Kinds without it cannot run in that mode.
   */
  readonly startPlaced?: (host: string, wrap: (bin: string, args: string[]) => { bin: string; args: string[] }) => Promise<RunningStore>;
  /** A URL the store's parser accepts without any environment, to tell it is registered. Default `<scheme>://127.0.0.1:1`. */
  readonly probeUrl?: string;
  /** The ways a `store` fault breaks it (its RunningStore's faultVariants); `--store-faults` picks among them. */
  readonly storeFaults: readonly string[];
  /** More ways, used only when `--store-faults` names them (so that the default, and every seed drawn from it, stays as it was). */
  readonly optInStoreFaults?: readonly string[];
}

/** A server process: killed and started again on its data, or frozen (SIGSTOP) and thawed. */
const SERVER_FAULTS = Object.freeze(['restart', 'freeze']);
/** A cluster: one member at a time killed (started again on its data) or frozen. */
const CLUSTER_FAULTS = Object.freeze(['member-kill', 'member-freeze']);
/** An etcd cluster, on request: freeze the member that is raft leader at that moment. */
const ETCD_LEADER_FREEZE = Object.freeze(['member-freeze-leader']);
/** SQLite: another process holds the exclusive lock. */
const SQLITE_FAULTS = Object.freeze(['lock']);

const SHORT: ChaosTiming = { leaseDurationMs: 1000, renewDeadlineMs: 600, retryPeriodMs: 250 };

/** STORE_KINDS lists every store a chaos run can target. */
export const STORE_KINDS: Readonly<Record<string, ChaosStoreKind>> = Object.freeze({
  sqlite: { name: 'sqlite', scheme: 'sqlite', network: false, timing: SHORT, start: startSqlite, storeFaults: SQLITE_FAULTS },
  postgres: { name: 'postgres', scheme: 'postgres', network: true, timing: SHORT, start: () => startServer(new PostgresServer()), startPlaced: (host, wrap) => startServer(new PostgresServer().place(host, wrap)), storeFaults: SERVER_FAULTS },
  redis: { name: 'redis', scheme: 'redis', network: true, timing: SHORT, start: () => startServer(new RedisServer()), startPlaced: (host, wrap) => startServer(new RedisServer().place(host, wrap)), storeFaults: SERVER_FAULTS },
  // MySQL has no change feed: standbys poll (docs/stores/mysql.md), so its gap bound uses the poll wait.
  mysql: { name: 'mysql', scheme: 'mysql', network: true, polls: true, timing: SHORT, start: () => startServer(new MariaDBServer()), startPlaced: (host, wrap) => startServer(new MariaDBServer().place(host, wrap)), storeFaults: SERVER_FAULTS },
  nats: { name: 'nats', scheme: 'nats', network: true, timing: SHORT, start: () => startServer(new NatsServer()), startPlaced: (host, wrap) => startServer(new NatsServer().place(host, wrap)), storeFaults: SERVER_FAULTS },
  // etcd grants leases in whole seconds with a minimum of two (so 2 s is the shortest lease it
  // honours as asked), and revokes expired leases on a half-second sweep, so a dead leader's
  // lease can outlive its TTL by up to 500 ms: the retry period is chosen longer than that, so
  // the gap bound (lease + retry + RTT) covers the server's own lateness.
  etcd: {
    name: 'etcd',
    scheme: 'etcd',
    network: true,
    queue: true,
    timing: { leaseDurationMs: 2000, renewDeadlineMs: 1200, retryPeriodMs: 750 },
    start: () => startServer(new EtcdServer()),
    startPlaced: (host, wrap) => startServer(new EtcdServer().place(host, wrap)),
    storeFaults: SERVER_FAULTS,
  },
  // dynalite (the DynamoDB API on LevelDB) in its own process; the endpoint is in the URL's
  // query, so partitions rewrite it. Requests time out after 400 ms, inside the renew deadline.
  dynamodb: { name: 'dynamodb', scheme: 'dynamodb', network: true, polls: true, timing: SHORT, start: startDynalite, storeFaults: SERVER_FAULTS },
  k8s: { name: 'k8s', scheme: 'k8s', network: true, timing: SHORT, start: startKubeApiServer, storeFaults: SERVER_FAULTS },
  // ZooKeeper expires sessions on its tick (200 ms here), so a dead leader's node can outlive
  // its lease by up to one tick: the retry period covers that, as etcd's does its sweep.
  // A queue store: a campaign enqueues, then reads the line, and claims only if it is first —
  // possibly long after the call began (a new session after a pause, a slow read under load). The
  // seed-4401 long run showed one such claim whose call began 48 ms before the previous leader's
  // deadline yet found the line free only after that leader had stopped: judged from its return.
  zookeeper: {
    name: 'zookeeper',
    scheme: 'zk',
    network: true,
    queue: true,
    timing: { leaseDurationMs: 2000, renewDeadlineMs: 1200, retryPeriodMs: 750 },
    start: () => startZooKeeper(),
    startPlaced: (host, wrap) => startServer(new ZooKeeperServer().place(host, wrap), (port) => `zk://${host}:${port}/chaos`),
    storeFaults: SERVER_FAULTS,
  },
  // A three-member etcd cluster: the store fault kills one member (the next one each time) or
  // freezes it; the cluster keeps a quorum, so leadership must continue or move within the bound.
  'etcd-cluster': {
    name: 'etcd-cluster',
    scheme: 'etcd',
    network: false,
    queue: true,
    timing: { leaseDurationMs: 2000, renewDeadlineMs: 1200, retryPeriodMs: 750 },
    waitsOutPredecessor: true,
    start: (dir) => startEtcdCluster(dir),
    storeFaults: CLUSTER_FAULTS,
    optInStoreFaults: ETCD_LEADER_FREEZE,
  },
  // The same three-member cluster on the current etcd line (3.6, infra/kube/build.sh) whatever
  // BATON_ETCD_LINE says: etcd-cluster follows that variable (default Debian's 3.4), this kind
  // names its line so that a replay command or a CI case cannot silently run the other one.
  'etcd-cluster-current': {
    name: 'etcd-cluster-current',
    scheme: 'etcd',
    network: false,
    queue: true,
    timing: { leaseDurationMs: 2000, renewDeadlineMs: 1200, retryPeriodMs: 750 },
    waitsOutPredecessor: true,
    start: (dir) => startEtcdCluster(dir, 'current'),
    storeFaults: CLUSTER_FAULTS,
    optInStoreFaults: ETCD_LEADER_FREEZE,
  },
  // A three-member ZooKeeper ensemble, broken like etcd-cluster: one member at a time (the next
  // each time) killed or frozen, the other two a quorum. Same timing as the standalone kind
  // (sessions expire on the 200 ms tick), and a queue store like it.
  'zookeeper-ensemble': {
    name: 'zookeeper-ensemble',
    scheme: 'zk',
    network: false,
    queue: true,
    timing: { leaseDurationMs: 2000, renewDeadlineMs: 1200, retryPeriodMs: 750 },
    start: startZooKeeperEnsemble,
    storeFaults: CLUSTER_FAULTS,
  },
  // Azure blob leases last at least 15 s, so a dead or frozen leader's blob lease holds 15 s
  // whatever baton's lease is: the run's lease is 15 s too, so the gap bound (lease + retry +
  // RTT) is the server's. A fault round then takes minutes (faults scale with the lease): too
  // long for the CI run, done by hand (docs/stores/azblob.md).
  azblob: {
    name: 'azblob',
    scheme: 'azblob',
    network: true,
    timing: { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 1000 },
    probeUrl: 'azblob://account/container',
    start: startAzurite,
    storeFaults: SERVER_FAULTS,
  },
});

/** startZooKeeper runs a standalone ZooKeeper; its URL carries the root znode /chaos. */
function startZooKeeper(): Promise<RunningStore> {
  return startServer(new ZooKeeperServer(), (port) => `zk://127.0.0.1:${port}/chaos`);
}

/** isRegistered tells whether baton itself can open this kind of store (its scheme is in the store registry). */
export function isRegistered(kind: ChaosStoreKind): boolean {
  // By scheme, not by parsing a sample URL: some stores' URLs need more than a host (mysql: a database).
  return registeredStores().some((d) => d.schemes.includes(kind.scheme));
}

/** startServer starts a network store's server; `urlAt` builds its URL for a port when `server.url` cannot be rewritten by port. */
async function startServer(server: ManagedServer & { url: string | ((...args: never[]) => string) }, urlAt?: (port: number) => string): Promise<RunningStore> {
  await server.start();
  const via =
    urlAt ??
    ((port: number) => {
      const u = new URL(String(server.url));
      u.port = String(port);
      return u.toString();
    });
  return running(server, via(server.port), via);
}

async function startKubeApiServer(): Promise<RunningStore> {
  // No audit log: a chaos run counts nothing at the server, and it would load the server.
  const server = new KubeApiServer({ audit: false });
  await server.start();
  const kubeconfig = readFileSync(server.kubeconfig, 'utf8');
  const named = `server: ${server.server}`;
  if (!kubeconfig.includes(named)) throw new Error(`the API server's kubeconfig does not name ${server.server}`);
  // Candidates reach the API server itself (server.port), each through its own partition proxy.
  const via = (port: number) => {
    const path = join(server.dir, `kubeconfig-via-${port}`);
    writeFileSync(path, kubeconfig.replace(named, `server: https://127.0.0.1:${port}`));
    return `k8s://default?kubeconfig=${encodeURIComponent(path)}`;
  };
  return running(server, via(server.port), via);
}

/** running is a started managed server as the harness breaks and mends it (restart or freeze). */
function running(server: ManagedServer, url: string, urlVia: (port: number) => string): RunningStore {
  // A fault being healed while the run is torn down (Ctrl-C) must not start an orphan server.
  let stopped = false;
  return {
    url,
    port: server.port,
    urlVia,
    faultVariants: SERVER_FAULTS,
    async breakStore(variant) {
      if (variant !== 'freeze') return server.kill();
      // pause() stops every descendant too: PostgreSQL's backends call setsid() and leave the group.
      server.pause();
    },
    async mendStore(variant) {
      if (variant === 'freeze') {
        server.resume();
      } else if (!stopped) {
        await server.start();
      }
    },
    stop() {
      stopped = true;
      return server.stop();
    },
  };
}

/** DYNALITE_AWS_ENV keeps the AWS SDK of every candidate on loopback: static test credentials, no metadata service. */
export const DYNALITE_AWS_ENV = {
  AWS_ACCESS_KEY_ID: 'baton-chaos',
  AWS_SECRET_ACCESS_KEY: 'baton-chaos',
  AWS_EC2_METADATA_DISABLED: 'true',
  AWS_CONFIG_FILE: '/nonexistent/baton-aws-config',
  AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/baton-aws-credentials',
} as const;

async function startDynalite(): Promise<RunningStore> {
  // Candidates inherit this process's environment.
  Object.assign(process.env, DYNALITE_AWS_ENV);
  const urlAt = (port: number) => `dynamodb://baton?endpoint=${encodeURIComponent(`http://127.0.0.1:${port}`)}&region=us-east-1&timeout=400`;
  return startServer(new DynaliteServer(), urlAt);
}

async function startEtcdCluster(dir: string, line?: EtcdLine): Promise<RunningStore> {
  // The members' own logs go with the run's, so an overlap can be read against raft's view.
  const { members, url } = await etcdCluster(3, { line, logDir: dir });
  return runningCluster(members, `${url}?timeout=1s`, async () => (await etcdRaftLeader(members)).member);
}

/**
 * startZooKeeperEnsemble runs three ZooKeeper members; the URL lists all of them, so a client
 * whose member dies or freezes moves its session to another. Calls time out after 1 s (not the
 * default 2 s), so a renewal stuck on a frozen member gives up and reconnects elsewhere while
 * the session (2 s, the lease) still lives.
 */
async function startZooKeeperEnsemble(): Promise<RunningStore> {
  const members = await zooKeeperEnsemble(3);
  return runningCluster(members, `${members[0]!.url('/chaos')}?timeout=1s`);
}

/**
 * runningCluster is a store made of members: its faults kill (`member-kill`, started again on
 * its data at the heal) or freeze (`member-freeze`) one member at a time, each time the next.
 * With `raftLeader`, `member-freeze-leader` freezes the member that leads the cluster's own
 * consensus at that moment: the member whose return can act on a stale view (RELIABILITY
 * finding 4). Candidates reach the members directly (the URL lists them all), so partitions do
 * not apply.
 */
function runningCluster(members: readonly ManagedServer[], url: string, raftLeader?: () => Promise<ManagedServer>): RunningStore {
  let next = 0;
  let broken: ManagedServer | undefined;
  let stopped = false;
  return {
    url,
    urlVia: () => url,
    faultVariants: raftLeader ? [...CLUSTER_FAULTS, ...ETCD_LEADER_FREEZE] : CLUSTER_FAULTS,
    async breakStore(variant) {
      if (variant === 'member-freeze-leader') {
        if (!raftLeader) throw new Error('member-freeze-leader: this cluster cannot tell its raft leader');
        broken = await raftLeader();
        broken.pause();
        return;
      }
      broken = members[next++ % members.length]!;
      if (variant === 'member-freeze') broken.pause();
      else await broken.kill();
    },
    async mendStore(variant) {
      const m = broken;
      broken = undefined;
      if (!m) return;
      if (variant !== 'member-kill') m.resume();
      else if (!stopped) await m.start();
    },
    async stop() {
      stopped = true;
      await Promise.all(members.map((m) => m.stop()));
    },
  };
}

/**
 * startAzurite runs azurite for the azblob store. Candidates inherit the connection string and
 * reach azurite through their proxies by `?endpoint=`. The server fault "restart" stops azurite
 * with SIGTERM, not SIGKILL: azurite saves its metadata only every 5 s, so a SIGKILL would make
 * it forget acknowledged writes (a term counter among them), which Azure never does.
 */
async function startAzurite(): Promise<RunningStore> {
  const server = await new AzuriteServer().start();
  process.env.AZURE_STORAGE_CONNECTION_STRING = server.connectionString;
  let stopped = false;
  return {
    url: 'azblob://chaos',
    port: server.port,
    urlVia: (port) => `azblob://chaos?endpoint=${encodeURIComponent(`http://127.0.0.1:${port}/devstoreaccount1`)}`,
    faultVariants: SERVER_FAULTS,
    async breakStore(variant) {
      if (variant === 'freeze') server.pause();
      else await server.stopGracefully();
    },
    async mendStore(variant) {
      if (variant === 'freeze') server.resume();
      else if (!stopped) await server.start();
    },
    stop() {
      stopped = true;
      return server.stop();
    },
  };
}

async function startSqlite(dir: string): Promise<RunningStore> {
  const path = join(dir, 'chaos.db');
  let holder: SqlDatabase | undefined;
  return {
    url: `sqlite:${path}`,
    urlVia: () => `sqlite:${path}`,
    faultVariants: SQLITE_FAULTS,
    async breakStore() {
      holder = openDatabase(path, 5000);
      // In WAL mode readers go on; every writer waits for its busy timeout and fails.
      holder.exec('BEGIN EXCLUSIVE');
    },
    async mendStore() {
      holder?.exec('COMMIT');
      holder?.close();
      holder = undefined;
    },
    async stop() {
      holder?.close();
      holder = undefined;
    },
  };
}
