/**
 * What a bench run does, from its command line: `--quick` (a reduced run in about two
 * minutes, for CI smoke checks — never for published figures), `--only=a,b` (some
 * measurements), `--stores=a,b` (some stores), `--out=DIR`.
 *
 * Only a full run of everything writes bench/results/latest.*; any other run writes to
 * bench/results/scratch/ unless --out says otherwise, so a quick run never overwrites the
 * committed figures.
 */
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dirname } from 'node:path';
import type { Results } from './results.js';
import type { BenchStore, StoreKind } from './stores.js';

/** MEASUREMENTS are the measurement names `--only` accepts, in run order. */
export const MEASUREMENTS = ['rtt', 'handover', 'directed', 'peers', 'failover', 'idle', 'herd', 'scale', 'shards'] as const;
export type MeasurementName = (typeof MEASUREMENTS)[number];

/** BenchPlan is the sizes of every measurement. */
export interface BenchPlan {
  mode: 'full' | 'quick';
  only: ReadonlySet<MeasurementName>;
  stores: ReadonlySet<string> | undefined;
  outDir: string;
  /** Whether this run writes latest.* (a full run of everything). */
  official: boolean;
  rttWrites: number;
  handovers: number;
  /**
   * Handovers on a store whose standbys poll (no change feed): each takes about one jittered
   * retry period (2–4.4 s at default timing), so 200 would take ~11 minutes a store and say no
   * more about a distribution that the poll interval alone decides.
   */
  pollingHandovers: number;
  peerHandovers: number;
  kills: number;
  /** Leader renewals (2 s apart at default timing) per idle-standby counting window. */
  idleRenewals: number;
  /** etcd3 Election holder keepalives (5 s apart at TTL 15 s) per counting window. */
  etcd3IdleKeepalives: number;
  /** Seconds a redlock / redis-semaphore waiter is watched at the server. */
  peerIdleWindowS: number;
  leaseCounts: number[];
  scaleIntervals: number;
  herdCandidates: number;
  herdFailovers: number;
  /** Shard groups: N shards over M member processes (measure/shards.ts). */
  shardSizes: { shards: number; members: number }[];
}

/** BenchContext is handed to every measurement. */
export interface BenchContext {
  plan: BenchPlan;
  results: Results;
  /** A scratch directory for this run. */
  dir: string;
  notes: string[];
  log(message: string): void;
}

/** StoreUnderTest pairs a running store with its table row. */
export interface StoreUnderTest {
  kind: StoreKind;
  store: BenchStore;
}

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));

/** UsageError is a bad command line (exit 64). */
export class UsageError extends Error {}

/**
 * shardSizes are the shard groups a full run measures: BENCH_SHARD_SIZES (N×M, comma-separated,
 * e.g. 1000x20,10000x50), by default 1,000 shards over 20 members (see docs/shards.md, "Measured").
 */
function shardSizes(text = process.env.BENCH_SHARD_SIZES ?? '1000x20'): { shards: number; members: number }[] {
  return text.split(',').map((w) => {
    const [shards, members] = w.split('x').map(Number);
    if (!Number.isInteger(shards) || !Number.isInteger(members) || shards! < 1 || shards! > 10_000 || members! < 2) {
      throw new UsageError(`bench: BENCH_SHARD_SIZES: "${w}" is not SHARDSxMEMBERS (1–10000 shards, at least 2 members; e.g. 1000x20)`);
    }
    return { shards: shards!, members: members! };
  });
}

/** leaseCounts are the scale measurement's lease counts: BENCH_LEASE_COUNTS (comma-separated, e.g. 10000), else `fallback`. */
function leaseCounts(fallback: number[], text = process.env.BENCH_LEASE_COUNTS): number[] {
  if (text === undefined || text === '') return fallback;
  return text.split(',').map((w) => {
    const n = Number(w);
    if (!Number.isInteger(n) || n < 1 || n > 100_000) throw new UsageError(`bench: BENCH_LEASE_COUNTS: "${w}" is not a whole number of leases from 1 to 100000`);
    return n;
  });
}

/** parsePlan reads the command line; throws UsageError with a one-line reason. */
export function parsePlan(argv: readonly string[]): BenchPlan {
  let quick = false;
  let only: Set<MeasurementName> | undefined;
  let stores: Set<string> | undefined;
  let out: string | undefined;
  for (const arg of argv) {
    const [flag, value] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (flag === '--quick' && value === undefined) quick = true;
    else if (flag === '--only' && value) {
      only = new Set();
      for (const m of value.split(',')) {
        if (!(MEASUREMENTS as readonly string[]).includes(m)) throw new UsageError(`bench: --only: unknown measurement "${m}" (known: ${MEASUREMENTS.join(', ')})`);
        only.add(m as MeasurementName);
      }
    } else if (flag === '--stores' && value) stores = new Set(value.split(','));
    else if (flag === '--out' && value) out = resolve(value);
    else throw new UsageError(`bench: unknown or incomplete option "${arg}" (usage: npm run bench -- [--quick] [--only=${MEASUREMENTS.join(',')}] [--stores=sqlite,postgres,…] [--out=DIR])`);
  }
  const official = !quick && !only && !stores && !process.env.BENCH_LEASE_COUNTS;
  const base = {
    mode: quick ? ('quick' as const) : ('full' as const),
    only: only ?? new Set(MEASUREMENTS),
    stores,
    official,
    outDir: out ?? (official ? join(BENCH_DIR, 'results') : join(BENCH_DIR, 'results', 'scratch')),
  };
  if (quick) {
    return { ...base, rttWrites: 200, handovers: 15, pollingHandovers: 5, peerHandovers: 15, kills: 2, idleRenewals: 2, etcd3IdleKeepalives: 1, peerIdleWindowS: 2, leaseCounts: leaseCounts([100]), scaleIntervals: 1, herdCandidates: 30, herdFailovers: 1, shardSizes: [{ shards: 100, members: 5 }] };
  }
  return { ...base, rttWrites: 2000, handovers: 200, pollingHandovers: 40, peerHandovers: 200, kills: 20, idleRenewals: 17, etcd3IdleKeepalives: 4, peerIdleWindowS: 5, leaseCounts: leaseCounts([1, 1000, 10000]), scaleIntervals: 3, herdCandidates: 200, herdFailovers: 3, shardSizes: shardSizes() };
}
