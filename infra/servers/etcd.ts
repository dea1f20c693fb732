import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { kubeBinary } from '../kube/binaries.js';
import { ManagedServer, freePort, requireBinary, waitForPort } from './base.js';

/**
 * EtcdLine is which etcd runs: `debian` is the system's (3.4, Debian 12's etcd-server), `current`
 * the 3.6 release built from go.etcd.io/etcd/server/v3 by infra/kube/build.sh (the one the
 * Kubernetes API server of the tests runs on). BATON_ETCD_LINE picks the default.
 */
export type EtcdLine = 'debian' | 'current';

/** etcdLine reads BATON_ETCD_LINE (default `debian`). */
export function etcdLine(): EtcdLine {
  const v = process.env.BATON_ETCD_LINE ?? 'debian';
  if (v !== 'debian' && v !== 'current') throw new Error(`BATON_ETCD_LINE=${v}: expected debian or current`);
  return v;
}

/** etcdBinary is the etcd (or etcdctl) of a line. */
export function etcdBinary(line: EtcdLine, name: 'etcd' | 'etcdctl' = 'etcd'): string {
  if (line === 'current') return kubeBinary(name);
  return name === 'etcd' ? requireBinary(['/usr/bin/etcd'], 'etcd-server') : requireBinary(['/usr/bin/etcdctl'], 'etcd-client');
}

/** EtcdServer: a single-member etcd on loopback, or one member of `etcdCluster`. */
export class EtcdServer extends ManagedServer {
  peerPort = 0;
  readonly line: EtcdLine;
  /** Where the server's log goes besides the harness's in-memory tail (appended across restarts). */
  readonly logFile?: string;
  constructor(
    private readonly member?: { name: string; cluster: () => string; clusterToken: string },
    options: { line?: EtcdLine; logFile?: string } = {},
  ) {
    super('etcd');
    this.line = options.line ?? etcdLine();
    this.logFile = options.logFile;
    etcdBinary(this.line);
  }
  get url(): string {
    return `etcd://${this.host}:${this.port}`;
  }
  get endpoint(): string {
    return `http://${this.host}:${this.port}`;
  }
  protected override async prepare(): Promise<void> {
    this.peerPort = await freePort();
  }
  protected override command() {
    // A member of a cluster stays on loopback; a single server may be placed on a host of its own.
    const client = `http://${this.host}:${this.port}`;
    const peer = `http://${this.member ? '127.0.0.1' : this.host}:${this.peerPort}`;
    return {
      bin: etcdBinary(this.line),
      args: [
        '--name', this.member?.name ?? 'baton', '--data-dir', join(this.dir, 'data'),
        '--listen-client-urls', client, '--advertise-client-urls', client,
        '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
        '--initial-cluster', this.member?.cluster() ?? `baton=${peer}`, '--initial-cluster-state', existsSync(join(this.dir, 'data')) ? 'existing' : 'new',
        ...(this.member ? ['--initial-cluster-token', this.member.clusterToken] : []),
        '--logger', 'zap', '--log-outputs', this.logFile ? `stderr,${this.logFile}` : 'stderr',
      ],
      env: { ETCD_UNSUPPORTED_ARCH: process.arch === 'x64' ? '' : process.arch },
    };
  }
  protected override async ready(): Promise<void> {
    await waitForPort(this.port, 30_000, this.child, this.host);
    const until = Date.now() + 30_000;
    for (;;) {
      try {
        const res = await fetch(`${this.endpoint}/health`);
        if (res.ok && ((await res.json()) as { health?: string }).health === 'true') return;
      } catch {
        // not yet
      }
      if (Date.now() > until) throw new Error('etcd /health never turned true');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * etcdCluster starts a `size`-member etcd cluster on loopback (each member its own process, data
 * directory and ports) and resolves once every member answers /health. `url` lists every member.
 * With `logDir`, member mN also writes its log to `logDir/etcd-mN.log`.
 */
export async function etcdCluster(size = 3, options: { line?: EtcdLine; logDir?: string } = {}): Promise<{ members: EtcdServer[]; url: string }> {
  const names = Array.from({ length: size }, (_, i) => `m${i + 1}`);
  const token = `baton-${process.pid}-${Date.now()}`;
  const members: EtcdServer[] = [];
  const cluster = () => members.map((m, i) => `${names[i]}=http://127.0.0.1:${m.peerPort}`).join(',');
  for (const name of names) {
    const logFile = options.logDir ? join(options.logDir, `etcd-${name}.log`) : undefined;
    members.push(new EtcdServer({ name, cluster, clusterToken: token }, { line: options.line, logFile }));
  }
  for (const m of members) {
    m.port = await freePort();
    m.peerPort = await freePort();
  }
  // Members wait for a quorum before /health turns true: start them together.
  await Promise.all(members.map((m) => m.start()));
  return { members, url: `etcd://${members.map((m) => `127.0.0.1:${m.port}`).join(',')}` };
}

/**
 * etcdRaftLeader finds the member that says it is raft leader now (maintenance Status, over the
 * HTTP gateway, a second per member), with the cluster's raft term; frozen or restarting members
 * are passed over. Retries for about ten seconds while an election is under way.
 */
export async function etcdRaftLeader(members: readonly EtcdServer[]): Promise<{ member: EtcdServer; term: number }> {
  for (let attempt = 0; attempt < 50; attempt++) {
    for (const m of members) {
      try {
        const res = await fetch(`${m.endpoint}/v3/maintenance/status`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(1000) });
        const status = (await res.json()) as { leader?: string; raftTerm?: string; header?: { member_id?: string } };
        if (status.leader && status.leader === status.header?.member_id) return { member: m, term: Number(status.raftTerm) };
      } catch {
        // frozen or restarting: ask the next
      }
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('no etcd member says it is the raft leader');
}
