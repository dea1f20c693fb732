/**
 * NetTopology gives each process of a chaos run a host of its own: a network namespace with its
 * own address, all joined by one bridge, so faults between hosts are cut by the kernel (not inside
 * a TCP proxy). Needs root and `ip netns` (iproute2) and iptables; `netnsProblem()` says what is
 * missing.
 *
 * Layout (X is a /24 the run picks among 10.231.1–250.0/24, one no route on this machine uses):
 *
 *   namespace <prefix>-hub:   bridge br0; one port per host, and `root` (the harness's leg)
 *   namespace <prefix>-<host>: eth0 = 10.231.X.<i+1>/24, lo up
 *   root namespace:           <prefix-link>h = 10.231.X.254/24 (harness reaches every host)
 *
 * The bridge lives in its own namespace so that the root namespace's firewall (with br_netfilter
 * on, bridged frames pass the host's FORWARD chain) never sees the run's traffic.
 *
 * Faults, all inside the faulted host's own namespace, so deleting the namespace undoes them:
 * - partitions are iptables DROP rules (silent loss, as a real partition: TCP retransmits and
 *   delivers what it held after the heal). DROP rather than bringing eth0 down, which fails sends
 *   at once with ENETUNREACH and removes the route; rather than `tc netem loss 100%`, which cannot
 *   pick one peer (and this kernel has no sch_netem). The rules' packet counters prove the cut bit.
 * - loss is iptables `-m statistic --mode random` DROP, each direction, on eth0;
 * - delay queues eth0's packets (NFQUEUE) to infra/nfq-delay.py, which releases each after the
 *   delay: the kernel has no sch_netem, so this is the fixed one-way latency netem would add.
 *
 * Names carry a run-unique prefix `bt<pid in base 36>`; `removeLeftovers()` deletes the
 * namespaces and links of runs whose process is gone (a crash, a SIGKILL), and `destroy()` is
 * idempotent and synchronous, so it also runs from `process.on('exit')`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const NFQ_DELAY = fileURLToPath(new URL('./nfq-delay.py', import.meta.url));
const NAME = /^bt([0-9a-z]+)-/;

/** PartitionVariant names which direction(s) of a host's traffic a partition drops. */
export type PartitionVariant = 'two-way' | 'leader-to-store' | 'store-to-leader' | 'isolate';
export const PARTITION_VARIANTS: readonly PartitionVariant[] = ['two-way', 'leader-to-store', 'store-to-leader', 'isolate'];

/** LinkVariant is a degraded link: a fixed one-way delay each way, or random loss each way. */
export const LINK_VARIANTS = ['delay-50ms', 'delay-200ms', 'loss-5pct', 'loss-30pct'] as const;
export type LinkVariant = (typeof LINK_VARIANTS)[number];

/** netnsProblem says why network namespaces cannot be used here, or undefined if they can. */
export function netnsProblem(): string | undefined {
  if (process.getuid?.() !== 0) return 'network namespaces need root (this process is not uid 0)';
  for (const bin of ['ip', 'iptables', 'python3']) {
    if (spawnSync('sh', ['-c', `command -v ${bin}`]).status !== 0) return `${bin} is not installed (scripts/install-servers.sh installs iproute2, iptables and python3)`;
  }
  const probe = `bt${process.pid.toString(36)}-probe`;
  const r = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' });
  if (r.status !== 0) return `\`ip netns add\` fails: ${r.stderr.trim()}`;
  spawnSync('ip', ['netns', 'del', probe]);
  return undefined;
}

function sh(cmd: string, args: string[], ok = false): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0 && !ok) throw new Error(`netns: \`${cmd} ${args.join(' ')}\` failed: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** removeLeftovers deletes the namespaces and root links of earlier runs whose process is gone. */
export function removeLeftovers(): string[] {
  const removed: string[] = [];
  const dead = (name: string) => {
    const m = NAME.exec(name);
    return m !== null && !alive(parseInt(m[1]!, 36));
  };
  for (const line of sh('ip', ['netns', 'list'], true).split('\n')) {
    const name = line.split(' ')[0]!;
    if (name && dead(name)) (sh('ip', ['netns', 'del', name], true), removed.push(name));
  }
  for (const line of sh('ip', ['-o', 'link', 'show'], true).split('\n')) {
    const name = /^\d+: ([^@:]+)/.exec(line)?.[1];
    const run = name && /^bt([0-9a-z]+)h$/.exec(name);
    if (run && !alive(parseInt(run[1]!, 36))) (sh('ip', ['link', 'del', name!], true), removed.push(name!));
  }
  return removed;
}

/** A host of the topology: its namespace and address. */
export interface Host {
  readonly name: string;
  readonly netns: string;
  readonly address: string;
}

/** FaultCounters is what a fault's rules or delayer did: the proof that it bit. */
export interface FaultCounters {
  droppedPackets: number;
  delayedPackets: number;
}

/** NetTopology is one run's hosts and bridge. */
export class NetTopology {
  readonly prefix = `bt${process.pid.toString(36)}`;
  readonly hosts = new Map<string, Host>();
  readonly gateway: string;
  private readonly subnet: string;
  private readonly delayers = new Map<string, ChildProcess>();
  private destroyed = false;

  private constructor(subnet: string) {
    this.subnet = subnet;
    this.gateway = `${subnet}.254`;
  }

  /** create builds a hub and one host per name (removing dead runs' leftovers first). */
  static create(names: readonly string[]): NetTopology {
    const problem = netnsProblem();
    if (problem) throw new Error(`netns: ${problem}`);
    removeLeftovers();
    const used = sh('ip', ['-4', 'route', 'show'], true);
    let third = 1 + (process.pid % 250);
    for (let i = 0; i < 250 && used.includes(`10.231.${third}.`); i++) third = 1 + (third % 250);
    const t = new NetTopology(`10.231.${third}`);
    process.once('exit', () => t.destroy());
    try {
      t.build(names);
    } catch (err) {
      t.destroy();
      throw err;
    }
    return t;
  }

  private build(names: readonly string[]): void {
    const hub = `${this.prefix}-hub`;
    sh('ip', ['netns', 'add', hub]);
    sh('ip', ['-n', hub, 'link', 'add', 'br0', 'type', 'bridge']);
    sh('ip', ['-n', hub, 'link', 'set', 'br0', 'up']);
    names.forEach((name, i) => {
      const netns = `${this.prefix}-${name}`;
      const port = `p${i}`;
      sh('ip', ['netns', 'add', netns]);
      sh('ip', ['-n', hub, 'link', 'add', port, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns]);
      sh('ip', ['-n', hub, 'link', 'set', port, 'master', 'br0', 'up']);
      const address = `${this.subnet}.${i + 1}`;
      sh('ip', ['-n', netns, 'addr', 'add', `${address}/24`, 'dev', 'eth0']);
      sh('ip', ['-n', netns, 'link', 'set', 'eth0', 'up']);
      sh('ip', ['-n', netns, 'link', 'set', 'lo', 'up']);
      this.hosts.set(name, { name, netns, address });
    });
    const leg = `${this.prefix}h`;
    sh('ip', ['link', 'add', leg, 'type', 'veth', 'peer', 'name', 'root', 'netns', hub]);
    sh('ip', ['-n', hub, 'link', 'set', 'root', 'master', 'br0', 'up']);
    sh('ip', ['addr', 'add', `${this.gateway}/24`, 'dev', leg]);
    sh('ip', ['link', 'set', leg, 'up']);
  }

  host(name: string): Host {
    const h = this.hosts.get(name);
    if (!h) throw new Error(`netns: no host "${name}"`);
    return h;
  }

  /** wrap turns a command into one that runs in `host`'s namespace. */
  wrap(host: string, bin: string, args: readonly string[]): { bin: string; args: string[] } {
    return { bin: 'ip', args: ['netns', 'exec', this.host(host).netns, bin, ...args] };
  }

  private iptables(host: string, args: string[]): string {
    return sh('ip', ['netns', 'exec', this.host(host).netns, 'iptables', '-w', ...args]);
  }

  /**
   * partition drops `host`'s traffic with `store` (the store host's address) in the variant's
   * direction(s); `isolate` drops everything but loopback.
   */
  partition(host: string, variant: PartitionVariant, store: string): void {
    const peer = this.host(store).address;
    const out = ['-A', 'OUTPUT', '-o', 'eth0', ...(variant === 'isolate' ? [] : ['-d', peer]), '-j', 'DROP'];
    const inn = ['-A', 'INPUT', '-i', 'eth0', ...(variant === 'isolate' ? [] : ['-s', peer]), '-j', 'DROP'];
    if (variant !== 'store-to-leader') this.iptables(host, out);
    if (variant !== 'leader-to-store') this.iptables(host, inn);
  }

  /** degrade makes `host`'s link lossy or slow, both directions. Resolves once in force. */
  async degrade(host: string, variant: LinkVariant): Promise<void> {
    const loss = /^loss-(\d+)pct$/.exec(variant);
    if (loss) {
      const p = String(Number(loss[1]) / 100);
      this.iptables(host, ['-A', 'OUTPUT', '-o', 'eth0', '-m', 'statistic', '--mode', 'random', '--probability', p, '-j', 'DROP']);
      this.iptables(host, ['-A', 'INPUT', '-i', 'eth0', '-m', 'statistic', '--mode', 'random', '--probability', p, '-j', 'DROP']);
      return;
    }
    const delay = /^delay-(\d+)ms$/.exec(variant);
    if (!delay) throw new Error(`netns: unknown link variant ${variant}`);
    if (!existsSync(NFQ_DELAY)) throw new Error(`netns: ${NFQ_DELAY} is missing`);
    const { bin, args } = this.wrap(host, 'python3', [NFQ_DELAY, '1', delay[1]!]);
    const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'inherit'] });
    this.delayers.set(host, child);
    await new Promise<void>((resolve, reject) => {
      child.stdout!.once('data', () => resolve());
      child.once('exit', (code) => reject(new Error(`netns: nfq-delay exited (${code}) before binding`)));
    });
    // --queue-bypass: should the delayer die, packets flow rather than vanish.
    this.iptables(host, ['-A', 'OUTPUT', '-o', 'eth0', '-j', 'NFQUEUE', '--queue-num', '1', '--queue-bypass']);
    this.iptables(host, ['-A', 'INPUT', '-i', 'eth0', '-j', 'NFQUEUE', '--queue-num', '1', '--queue-bypass']);
  }

  /** heal removes every rule of `host` (and its delayer, which lets what it holds go) and says what they did. */
  async heal(host: string): Promise<FaultCounters> {
    let droppedPackets = 0;
    for (const line of this.iptables(host, ['-L', '-v', '-n', '-x']).split('\n')) {
      const m = /^\s*(\d+)\s+\d+\s+DROP\b/.exec(line);
      if (m) droppedPackets += Number(m[1]);
    }
    this.iptables(host, ['-F']);
    let delayedPackets = 0;
    const d = this.delayers.get(host);
    if (d) {
      this.delayers.delete(host);
      let out = '';
      d.stdout!.on('data', (b: Buffer) => (out += b.toString()));
      const exited = new Promise((r) => d.once('exit', r));
      d.stdin!.end();
      await Promise.race([exited, new Promise((r) => setTimeout(r, 2000))]);
      d.kill('SIGKILL');
      delayedPackets = Number(/DELAYED (\d+)/.exec(out)?.[1] ?? 0);
    }
    return { droppedPackets, delayedPackets };
  }

  /** destroy deletes every namespace and link of this run (idempotent, synchronous). */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const d of this.delayers.values()) d.kill('SIGKILL');
    for (const h of this.hosts.values()) sh('ip', ['netns', 'del', h.netns], true);
    sh('ip', ['netns', 'del', `${this.prefix}-hub`], true);
    sh('ip', ['link', 'del', `${this.prefix}h`], true);
  }
}
