/**
 * The chaos command line, checked once at the edge: a bad flag is one line naming it, exit 64;
 * a store baton cannot open yet is exit 78.
 */
import { Command, CommanderError } from 'commander';
import { parseDuration } from '../src/core/duration.js';
import { InvalidConfigError, UsageError } from '../src/core/errors.js';
import { resolveTiming } from '../src/core/options.js';
import { FAULT_KINDS, type FaultKind } from './events.js';
import { LINK_VARIANTS, PARTITION_VARIANTS } from '../infra/netns.js';
import { STORE_KINDS, isRegistered, type ChaosStoreKind, type ChaosTiming } from './stores.js';

/** ChaosOptions is a validated chaos command line. */
export interface ChaosOptions {
  kind: ChaosStoreKind;
  candidates: number;
  durationMs: number;
  faults: FaultKind[];
  /** Which of the store's fault variants `store` faults use (default: all of them). */
  storeFaults: readonly string[];
  seed: number;
  timing: ChaosTiming;
  writeEveryMs: number;
  /** Shard mode: candidates run a ShardGroup of this many shards (each with its own fenced register). */
  shards?: number;
  json?: string;
  keepLogs: boolean;
  /** Re-check the logs of an earlier run instead of running. */
  checkDir?: string;
  /** Where the processes run: all on loopback with partition proxies (default), or each on its own host (infra/netns.ts). */
  net: NetMode;
  /** Which partition variants `partition` faults use (netns: two-way, leader-to-store, store-to-leader, isolate; loopback: blackhole, reset). */
  partitionVariants: readonly string[];
  /** Which link variants `link` faults use (netns only). */
  linkVariants: readonly string[];
  /** Stop after this many faults (the matrix's trials) instead of after --duration. */
  trials?: number;
  /** Aim every fault at the leader (the matrix: every trial must depose someone). */
  atLeader: boolean;
}

/** NetMode is where a run's processes live. */
export type NetMode = 'loopback' | 'netns';
/** LOOPBACK_PARTITIONS are the proxy's ways to cut (infra/proxy.ts), in the order seeds draw them. */
export const LOOPBACK_PARTITIONS = Object.freeze(['blackhole', 'reset']);
/** NETNS_KINDS are the store kinds whose server can run on a host of its own. */
export const NETNS_KINDS = Object.freeze(['postgres', 'redis', 'nats', 'mysql', 'etcd', 'zookeeper']);

/** PARTITION_NEEDS_NETWORK explains why partitions skip SQLite. */
const PARTITION_NEEDS_NETWORK = 'candidates reach the database file through the local filesystem; there is no network path to cut';

/** parseChaosArgs parses argv (without node and script); throws UsageError / InvalidConfigError. */
export function parseChaosArgs(argv: string[]): ChaosOptions {
  const program = new Command('chaos')
    .description('Hunt for mutual-exclusion violations: real candidate processes, a fenced register, seeded faults.')
    .option('--store <kind>', `store to test: ${Object.keys(STORE_KINDS).join(', ')}`)
    .option('--candidates <n>', 'candidate processes (2–9)', '3')
    .option('--duration <d>', 'how long to inject faults, e.g. 20s, 30m (at least one of each kind)', '60s')
    .option('--faults <list>', `comma-separated fault kinds (${FAULT_KINDS.join(', ')}), "all" or "none"`, 'all')
    .option('--store-faults <list>', 'which ways a store fault breaks the store (e.g. restart,freeze; member-kill,member-freeze on a cluster, member-freeze-leader on an etcd cluster); default all but the opt-in ones')
    .option('--seed <n>', 'seed of the fault schedule (default: random, printed)')
    .option('--lease <d>', 'lease duration (default per store: 1s, etcd 2s)')
    .option('--renew-deadline <d>', 'renew deadline (default 60% of the lease)')
    .option('--retry-period <d>', 'retry period (default 25% of the lease)')
    .option('--write-every <d>', 'interval between a leader\'s register writes (default 5ms; with --shards, 20ms per shard)')
    .option('--shards <n>', 'shard mode: candidates run a ShardGroup of n shards (1–256), one fenced register per shard')
    .option('--json <file>', 'write the full result as JSON')
    .option('--keep-logs', 'keep the run\'s logs even when it passes')
    .option('--check <dir>', 're-check the logs an earlier run kept, without running')
    .option('--net <mode>', 'loopback (default: one host, partition proxies) or netns (a network namespace per process, kernel-level faults; root)', 'loopback')
    .option('--partition <list>', `partition variants (netns: ${PARTITION_VARIANTS.join(', ')}; loopback: ${LOOPBACK_PARTITIONS.join(', ')}); default all`)
    .option('--link <list>', `link variants for link faults (${LINK_VARIANTS.join(', ')}); default all`)
    .option('--trials <n>', 'stop after n faults instead of after --duration')
    .option('--at-leader', 'aim every fault at the leader (default: 80 % of them)')
    .exitOverride()
    .configureOutput({ writeErr: () => {}, writeOut: (s) => process.stdout.write(s) })
    .allowExcessArguments(false);
  try {
    program.parse(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError && (err.code === 'commander.helpDisplayed' || err.code === 'commander.version')) throw err;
    throw new UsageError(`chaos: ${(err as Error).message.replace(/^error: /, '')}`);
  }
  const o = program.opts<Record<string, string | boolean | undefined>>();
  const text = (k: string) => (typeof o[k] === 'string' ? (o[k] as string) : undefined);
  const checkDir = text('check');
  const storeName = text('store');
  if (!storeName && !checkDir) throw new UsageError(`chaos: --store is required (one of ${Object.keys(STORE_KINDS).join(', ')})`);
  const kind = STORE_KINDS[storeName ?? 'sqlite'];
  if (!kind) throw new UsageError(`chaos: --store "${storeName}" is not a chaos store kind (one of ${Object.keys(STORE_KINDS).join(', ')})`);
  if (!checkDir && !isRegistered(kind)) {
    throw new InvalidConfigError(`chaos: baton has no "${kind.scheme}:" store yet (it is not in src/stores/registry.ts)`);
  }
  const candidates = Number(text('candidates'));
  if (!Number.isInteger(candidates) || candidates < 2 || candidates > 9) throw new UsageError(`chaos: --candidates must be a whole number from 2 to 9, got "${text('candidates')}"`);
  const seedText = text('seed');
  const seed = seedText === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(seedText);
  if (!Number.isInteger(seed) || seed < 0 || seed >= 2 ** 32) throw new UsageError(`chaos: --seed must be a whole number from 0 to 4294967295, got "${seedText}"`);
  const lease = text('lease') !== undefined ? parseDuration(text('lease')!, '--lease') : kind.timing.leaseDurationMs;
  const scaled = lease !== kind.timing.leaseDurationMs;
  const timing = resolveTiming({
    leaseDurationMs: lease,
    renewDeadlineMs: text('renewDeadline') !== undefined ? parseDuration(text('renewDeadline')!, '--renew-deadline') : scaled ? Math.round(lease * 0.6) : kind.timing.renewDeadlineMs,
    retryPeriodMs: text('retryPeriod') !== undefined ? parseDuration(text('retryPeriod')!, '--retry-period') : scaled ? Math.round(lease * 0.25) : kind.timing.retryPeriodMs,
  });
  const shardsText = text('shards');
  const shards = shardsText === undefined ? undefined : Number(shardsText);
  if (shards !== undefined && !(Number.isInteger(shards) && shards >= 1 && shards <= 256)) throw new UsageError(`chaos: --shards must be a whole number from 1 to 256, got "${shardsText}"`);
  const net = text('net') as NetMode;
  if (net !== 'loopback' && net !== 'netns') throw new UsageError(`chaos: --net must be loopback or netns, got "${net}"`);
  if (net === 'netns' && !checkDir && !NETNS_KINDS.includes(kind.name)) throw new UsageError(`chaos: --net netns runs ${NETNS_KINDS.join(', ')} (not ${kind.name})`);
  const trialsText = text('trials');
  const trials = trialsText === undefined ? undefined : Number(trialsText);
  if (trials !== undefined && !(Number.isInteger(trials) && trials >= 1 && trials <= 10_000)) throw new UsageError(`chaos: --trials must be a whole number from 1 to 10000, got "${trialsText}"`);
  const writeEveryMs = parseDuration(text('writeEvery') ?? (shards ? '20ms' : '5ms'), '--write-every');
  if (writeEveryMs < 1) throw new UsageError('chaos: --write-every must be at least 1ms');
  return {
    kind,
    candidates,
    durationMs: parseDuration(text('duration')!, '--duration'),
    faults: parseFaults(text('faults')!, kind, shards, net),
    storeFaults: parseStoreFaults(text('storeFaults'), kind),
    net,
    partitionVariants: parseVariants('--partition', text('partition'), net === 'netns' ? PARTITION_VARIANTS : LOOPBACK_PARTITIONS),
    linkVariants: parseVariants('--link', text('link'), LINK_VARIANTS),
    trials,
    atLeader: o.atLeader === true,
    seed,
    timing: {
      leaseDurationMs: timing.leaseDurationMs,
      renewDeadlineMs: timing.renewDeadlineMs,
      retryPeriodMs: timing.retryPeriodMs,
      ...(kind.polls ? { pollMs: Math.round(timing.retryPeriodMs * (1 + timing.jitterFactor)) } : {}),
      ...(kind.queue ? { queue: true } : {}),
      ...(kind.waitsOutPredecessor ? { predecessorWaitMs: timing.renewDeadlineMs } : {}),
    },
    writeEveryMs,
    shards,
    json: text('json'),
    keepLogs: o.keepLogs === true,
    checkDir,
  };
}

/** applicableFaults lists the fault kinds `--faults all` means for a store kind (link and load only when named). */
export function applicableFaults(kind: ChaosStoreKind, shards?: number): FaultKind[] {
  return FAULT_KINDS.filter((k) => k !== 'link' && k !== 'load' && (k !== 'partition' || kind.network) && (k !== 'handover' || handoverApplies(kind, shards)));
}

function parseVariants(flag: string, list: string | undefined, known: readonly string[]): readonly string[] {
  if (list === undefined) return known;
  const words = [...new Set(list.split(',').map((w) => w.trim().toLowerCase()).filter(Boolean))];
  for (const w of words) if (!known.includes(w)) throw new UsageError(`chaos: ${flag}: "${w}" is not one of ${known.join(', ')}`);
  if (words.length === 0) throw new UsageError(`chaos: ${flag} is empty (choose from ${known.join(', ')})`);
  return known.filter((w) => words.includes(w));
}

/** handoverApplies: directed handovers (core/handover.ts) are asked of single elections (every store has them). */
export function handoverApplies(_kind: ChaosStoreKind, shards?: number): boolean {
  return shards === undefined;
}

function parseStoreFaults(list: string | undefined, kind: ChaosStoreKind): readonly string[] {
  if (list === undefined) return kind.storeFaults;
  const known = [...kind.storeFaults, ...(kind.optInStoreFaults ?? [])];
  const words = [...new Set(list.split(',').map((w) => w.trim().toLowerCase()).filter(Boolean))];
  for (const w of words) {
    if (!known.includes(w)) throw new UsageError(`chaos: --store-faults: "${w}" is not a way to break ${kind.name} (${known.join(', ')})`);
  }
  if (words.length === 0) throw new UsageError(`chaos: --store-faults is empty (choose from ${known.join(', ')})`);
  return known.filter((w) => words.includes(w));
}

function parseFaults(list: string, kind: ChaosStoreKind, shards: number | undefined, net: NetMode): FaultKind[] {
  const words = list.split(',').map((w) => w.trim().toLowerCase()).filter(Boolean);
  if (words.length === 1 && words[0] === 'all') return applicableFaults(kind, shards);
  if (words.length === 1 && words[0] === 'none') return [];
  const out: FaultKind[] = [];
  for (const w of words) {
    if (!(FAULT_KINDS as readonly string[]).includes(w)) throw new UsageError(`chaos: --faults: "${w}" is not a fault kind (${FAULT_KINDS.join(', ')}, all, none)`);
    if (w === 'partition' && !kind.network) throw new UsageError(`chaos: --faults: partition does not apply to ${kind.name}: ${PARTITION_NEEDS_NETWORK}`);
    if (w === 'link' && net !== 'netns') throw new UsageError('chaos: --faults: link needs --net netns (a slow or lossy link between hosts)');
    if (w === 'handover' && !handoverApplies(kind, shards)) throw new UsageError(`chaos: --faults: handover does not apply to ${kind.name}${shards !== undefined ? ' with --shards' : ''}: directed handover is for single elections`);
    if (!out.includes(w as FaultKind)) out.push(w as FaultKind);
  }
  if (out.length === 0) throw new UsageError('chaos: --faults is empty (use "none" for a run without faults)');
  return out;
}
