import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { ManagedServer, freePort, requireBinary, waitForPort } from './base.js';

/** The Debian jars a ZooKeeper 3.8 server needs (zookeeper.jar's manifest names the rest). */
const CLASSPATH = ['/usr/share/java/zookeeper.jar', '/usr/share/java/slf4j-api.jar', '/usr/share/java/slf4j-simple.jar'].join(':');

/** ZkMember says where one member of an ensemble listens. */
interface ZkMember {
  id: number;
  clientPort: number;
  quorumPort: number;
  electionPort: number;
}

/**
 * ZooKeeperServer: Debian's ZooKeeper 3.8 (QuorumPeerMain on Java 17) on loopback, standalone
 * by default, or one member of a loopback ensemble made by `zooKeeperEnsemble`. The tick is
 * short (200 ms) so session timeouts as low as 400 ms are honoured (minSessionTimeout = 2 ticks).
 */
export class ZooKeeperServer extends ManagedServer {
  constructor(
    private readonly member?: { id: number; all: () => ZkMember[] },
    private readonly tickMs = 200,
  ) {
    super('zookeeper');
    requireBinary(['/usr/share/java/zookeeper.jar'], 'zookeeper');
    requireBinary(['/usr/bin/java'], 'default-jre-headless');
  }

  /** connectString is `127.0.0.1:port` for this member (or every member, for an ensemble member). */
  get connectString(): string {
    return this.member ? this.member.all().map((m) => `127.0.0.1:${m.clientPort}`).join(',') : `${this.host}:${this.port}`;
  }

  /** url is the baton store URL for `path` (default /baton). */
  url(path = '/baton'): string {
    return `zk://${this.connectString}${path}`;
  }

  /** ports this member uses among its peers (set once it was started). */
  quorumPort = 0;
  electionPort = 0;

  protected override async prepare(): Promise<void> {
    if (this.member) {
      this.quorumPort = await freePort();
      this.electionPort = await freePort();
    }
  }

  /** writeConfig writes zoo.cfg (and myid) for the current member list. */
  private writeConfig(): string {
    const data = join(this.dir, 'data');
    mkdirSync(data, { recursive: true });
    const lines = [
      `tickTime=${this.tickMs}`,
      'initLimit=20',
      'syncLimit=10',
      `dataDir=${data}`,
      `clientPort=${this.port}`,
      `clientPortAddress=${this.host}`,
      'admin.enableServer=false',
      '4lw.commands.whitelist=ruok,mntr,srvr,stat',
      'maxClientCnxns=0',
      // Leases of a minute fit in a session (baton's session timeout is the lease duration;
      // the default cap, 20 ticks, would be 4 s here).
      'maxSessionTimeout=60000',
    ];
    if (this.member) {
      writeFileSync(join(data, 'myid'), `${this.member.id}\n`);
      for (const m of this.member.all()) lines.push(`server.${m.id}=127.0.0.1:${m.quorumPort}:${m.electionPort}`);
    }
    const cfg = join(this.dir, 'zoo.cfg');
    writeFileSync(cfg, `${lines.join('\n')}\n`);
    return cfg;
  }

  protected override command() {
    return {
      bin: '/usr/bin/java',
      args: ['-Xms32m', '-Xmx256m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-cp', CLASSPATH, 'org.apache.zookeeper.server.quorum.QuorumPeerMain', this.writeConfig()],
      env: { ZOO_LOG4J_PROP: 'WARN,CONSOLE' },
    };
  }

  /**
   * ready waits until the member serves (`srvr` shows a Mode) — or, for an ensemble member
   * started alone, until it listens. Probes overlap, one every 20 ms: chaos runs take the moment
   * this resolves as when the store is back, and a probe answered slowly under load must not
   * hold that moment back while clients are already being served.
   */
  protected override async ready(): Promise<void> {
    await waitForPort(this.port, 60_000, this.child, this.host);
    if (this.member && this.startingAlone) return; // a lone ensemble member cannot serve until a quorum is up
    const until = Date.now() + 60_000;
    let last = '';
    let served = false;
    const inFlight = new Set<Promise<void>>();
    while (!served) {
      if (Date.now() > until) throw new Error(`zookeeper on ${this.port} never served (last answer: ${last.slice(0, 200)})`);
      if (this.child && this.child.exitCode !== null) throw new Error(`zookeeper exited with ${this.child.exitCode} before serving`);
      if (inFlight.size < 20) {
        const probe: Promise<void> = fourLetter(this.port, 'srvr', 2000, this.host)
          .then(
            (answer) => {
              last = answer;
              if (/Mode: (standalone|leader|follower)/.test(answer)) served = true;
            },
            () => {},
          )
          .finally(() => inFlight.delete(probe));
        inFlight.add(probe);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Set by zooKeeperEnsemble while members start one by one. */
  startingAlone = false;

  /** mode is the member's role now: standalone, leader, follower, or '' when it does not serve. */
  async mode(): Promise<string> {
    const answer = await fourLetter(this.port, 'srvr', 2000, this.host).catch(() => '');
    return /Mode: (\w+)/.exec(answer)?.[1] ?? '';
  }

  /** dataExists tells whether this server has written data (a restart keeps it). */
  get hasData(): boolean {
    return existsSync(join(this.dir, 'data', 'version-2'));
  }
}

/** fourLetter sends a ZooKeeper four-letter command and returns the whole answer. */
export function fourLetter(port: number, word: string, timeoutMs = 2000, host = '127.0.0.1'): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const s = connect({ host, port }, () => s.write(word));
    s.setTimeout(timeoutMs, () => s.destroy(new Error('timeout')));
    s.on('data', (b) => (out += b.toString()));
    s.on('end', () => resolve(out));
    s.on('error', reject);
  });
}

/**
 * zooKeeperEnsemble starts `size` members on loopback (each its own process, data directory and
 * ports) and resolves once a quorum serves. Members can be killed, paused and restarted one by one.
 */
export async function zooKeeperEnsemble(size = 3): Promise<ZooKeeperServer[]> {
  const members: ZooKeeperServer[] = [];
  const all = () => members.map((m, i) => ({ id: i + 1, clientPort: m.port, quorumPort: m.quorumPort, electionPort: m.electionPort }));
  for (let i = 0; i < size; i++) members.push(new ZooKeeperServer({ id: i + 1, all }));
  // Ports first (every member's config lists all of them), then start all.
  for (const m of members) {
    m.port = await freePort();
    m.quorumPort = await freePort();
    m.electionPort = await freePort();
  }
  for (const m of members) m.startingAlone = true;
  await Promise.all(members.map((m) => m.start()));
  for (const m of members) m.startingAlone = false;
  const until = Date.now() + 60_000;
  for (;;) {
    const modes = await Promise.all(members.map((m) => m.mode()));
    if (modes.includes('leader') && modes.filter((x) => x === 'follower').length >= Math.floor(size / 2)) return members;
    if (Date.now() > until) throw new Error(`zookeeper ensemble never formed (modes: ${modes.join(', ')})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
