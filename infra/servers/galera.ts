/**
 * A MariaDB Galera cluster on loopback: each node is a private mariadbd (MariaDBServer) with its
 * own datadir, SQL port, group-communication port (gcomm), IST port and SST port, all free
 * loopback ports. The first node bootstraps the cluster (--wsrep-new-cluster, first start only);
 * the others join it and copy its data by rsync (SST). A killed node starts again on the same
 * ports with its data and rejoins: by IST (only the write sets it missed) when a donor still
 * holds them in its cache, as after a short outage, otherwise by a fresh SST.
 *
 * Needs the Debian packages galera-4 (the wsrep provider) and rsync (the SST method).
 */
import { chownSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, requireBinary } from './base.js';
import { MariaDBServer } from './mariadb.js';

const PROVIDER = ['/usr/lib/galera/libgalera_smm.so', '/usr/lib/libgalera_smm.so'];

/**
 * GALERA_SUSPECT_TIMEOUT_MS: how long the group waits for a silent node before it starts to evict
 * it (evs.suspect_timeout, Galera's default). Until a killed node is evicted, the others hold
 * every commit: a bound on failover after a node dies must include it.
 */
export const GALERA_SUSPECT_TIMEOUT_MS = 5_000;

/** The ports and names one node needs to know about the cluster it is in. */
interface Membership {
  readonly clusterName: string;
  readonly index: number;
  /** Every node's gcomm port (the cluster address lists them all). */
  readonly gcommPorts: () => number[];
}

/** GaleraNode is one node of `galeraCluster`: a MariaDBServer with wsrep on. */
export class GaleraNode extends MariaDBServer {
  gcommPort = 0;
  istPort = 0;
  sstPort = 0;
  /** Only the first start of the first node makes a new cluster; every later start joins. */
  private bootstrap: boolean;

  constructor(private readonly member: Membership) {
    super(`galera${member.index + 1}`);
    requireBinary(PROVIDER, 'galera-4');
    requireBinary(['/usr/bin/rsync'], 'rsync');
    this.bootstrap = member.index === 0;
  }

  /** The node's name in the cluster (wsrep_node_name). */
  get nodeName(): string {
    return `n${this.member.index + 1}`;
  }

  protected override async prepare(): Promise<void> {
    // Only the bootstrap node needs a system database of its own; a joiner receives the whole
    // datadir from its donor by SST before it opens any table.
    if (this.member.index === 0) return super.prepare();
    for (const d of [this.tmp, join(this.dir, 'data')]) {
      mkdirSync(d, { recursive: true });
      if (this.uid !== undefined) chownSync(d, this.uid, this.gid!);
    }
  }

  protected override extraArgs(): string[] {
    const peers = this.member.gcommPorts().map((p) => `127.0.0.1:${p}`).join(',');
    const provider = [
      `base_host=127.0.0.1`, `base_port=${this.gcommPort}`, `gmcast.listen_addr=tcp://127.0.0.1:${this.gcommPort}`, `ist.recv_addr=127.0.0.1:${this.istPort}`,
      // A small write-set cache; the group timeouts stay at Galera's defaults, stated here: shorter
      // ones evict a node that is merely slow (an SST on a loaded machine) and break the join.
      'gcache.size=64M', `evs.suspect_timeout=PT${GALERA_SUSPECT_TIMEOUT_MS / 1000}S`,
    ].join(';');
    const args = [
      '--wsrep-on=ON', `--wsrep-provider=${requireBinary(PROVIDER, 'galera-4')}`, `--wsrep-provider-options=${provider}`,
      `--wsrep-cluster-name=${this.member.clusterName}`, `--wsrep-cluster-address=gcomm://${peers}`,
      `--wsrep-node-name=${this.nodeName}`, `--wsrep-node-address=127.0.0.1:${this.gcommPort}`,
      `--wsrep-node-incoming-address=127.0.0.1:${this.port}`,
      '--wsrep-sst-method=rsync', `--wsrep-sst-receive-address=127.0.0.1:${this.sstPort}`,
      // What Galera requires of the server: row events, InnoDB, interleaved auto-increment locks.
      '--binlog-format=ROW', '--default-storage-engine=InnoDB', '--innodb-autoinc-lock-mode=2',
      '--wsrep-slave-threads=2',
    ];
    if (this.bootstrap) args.push('--wsrep-new-cluster');
    return args;
  }

  /** Waits until the node is a synced member of the primary component and takes queries. */
  protected override async serving(): Promise<void> {
    const until = Date.now() + 90_000;
    for (;;) {
      if (!this.running) throw new Error(`exited (${this.child?.exitCode ?? this.child?.signalCode})`);
      try {
        const s = this.status();
        if (s.wsrep_ready === 'ON' && s.wsrep_local_state_comment === 'Synced' && s.wsrep_cluster_status === 'Primary') break;
      } catch {
        // not answering yet
      }
      if (Date.now() > until) throw new Error('never became a synced member of the primary component');
      await new Promise((r) => setTimeout(r, 200));
    }
    this.bootstrap = false;
  }

  /** running: the node's process is alive (it may still be joining). */
  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** status reads the node's wsrep status variables (as root over its socket). */
  status(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const line of this.sql("SHOW GLOBAL STATUS LIKE 'wsrep%'").split('\n')) {
      const [k, v] = line.split('\t');
      if (k) out[k] = v ?? '';
    }
    return out;
  }
}

/** GaleraCluster is what `galeraCluster` starts: its nodes, in start order. */
export interface GaleraCluster {
  readonly nodes: GaleraNode[];
  /** stop kills every node and removes their data. */
  stop(): Promise<void>;
  /** waitForSize resolves once every running node reports `size` synced members. */
  waitForSize(size: number, timeoutMs?: number): Promise<void>;
}

/**
 * galeraCluster starts a `size`-node MariaDB Galera cluster on loopback and resolves once every
 * node reports wsrep_cluster_size = size and wsrep_ready = ON. The first node bootstraps; the
 * others join one after another, each copying a synced donor's data by SST.
 */
export async function galeraCluster(size = 3): Promise<GaleraCluster> {
  const nodes: GaleraNode[] = [];
  const clusterName = `baton-${process.pid}-${Date.now()}`;
  for (let index = 0; index < size; index++) nodes.push(new GaleraNode({ clusterName, index, gcommPorts: () => nodes.map((n) => n.gcommPort) }));
  for (const n of nodes) {
    n.gcommPort = await freePort();
    n.istPort = await freePort();
    n.sstPort = await freePort();
  }
  const waitForSize = async (want: number, timeoutMs = 60_000) => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const running = nodes.filter((n) => n.running);
      const ok = running.every((n) => {
        try {
          const s = n.status();
          return s.wsrep_ready === 'ON' && Number(s.wsrep_cluster_size) === want;
        } catch {
          return false;
        }
      });
      if (ok) return;
      if (Date.now() > until) throw new Error(`galera: the cluster did not reach ${want} nodes within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  try {
    // One at a time: a joiner needs a synced donor, and joiners started together on a loaded
    // machine were seen to fail to reach the primary component. A joiner that fails once (its
    // SST cut short) gets one more try.
    await nodes[0]!.start();
    for (const n of nodes.slice(1)) await n.start().catch(async () => (await n.kill(), n.start()));
    await waitForSize(size);
  } catch (err) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw err;
  }
  return { nodes, stop: async () => void (await Promise.all(nodes.map((n) => n.stop()))), waitForSize };
}
