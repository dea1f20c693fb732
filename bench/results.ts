/**
 * The bench's output: one row per system × metric (× lease count), plus the machine record.
 * This is the shape of bench/results/latest.json; report.ts and chart.ts read only this.
 */
import type { Summary } from './stats.js';
import { round } from './stats.js';

/** Metric names, as the brief defines them. */
export type Metric =
  | 'store_rtt_ms'
  | 'graceful_handover_ms'
  | 'handover_gap_ms'
  | 'handover_leaderless_ms'
  | 'crash_failover_ms'
  | 'crash_failover_from_renewal_ms'
  | 'idle_standby_rps'
  | 'leader_round_trips_per_renew'
  | 'leader_server_requests_per_renew'
  | 'cpu_percent'
  | 'rss_mb'
  | 'ops_per_candidate_per_failover'
  | 'shard_rebalance_ms'
  | 'shards_moved'
  | 'shard_store_rps';

/** ResultRow is one measured (or computed) figure. */
export interface ResultRow {
  /** "baton-redis", "redlock", "redlock-tuned", "redis-semaphore", "etcd3-election", "kubernetes-client-go". */
  system: string;
  store: string;
  metric: Metric;
  unit: string;
  n?: number;
  p50?: number;
  p90?: number;
  p99?: number;
  max?: number;
  mean?: number;
  /** A single figure (a rate, a percentage, a count per interval). */
  value?: number;
  leases?: number;
  /** Settings the figure was taken with (timing, retry delays). */
  settings?: string;
  /** How it was counted or timed. */
  method?: string;
  /** True for analytical figures (computed, not measured). */
  computed?: boolean;
  /** Raw samples (handover latencies) for the chart. */
  samples?: number[];
  /** Anything else worth keeping (per-kind request breakdowns, targets). */
  detail?: Record<string, unknown>;
}

/** Machine is where and with what the run happened. */
export interface Machine {
  cpuModel: string;
  cores: number;
  memoryGb: number;
  os: string;
  node: string;
  servers: Record<string, string>;
  peers: Record<string, string>;
  /** Median 4 KiB write + fdatasync in the servers' data directory, ms. */
  fsyncP50Ms?: number;
  loadAverageAtStart: number[];
  loadAverageAtEnd?: number[];
  mode: 'full' | 'quick';
  /** What the run measured: "everything", or the --only / --stores / BENCH_LEASE_COUNTS it was limited to. */
  scope?: string;
  startedAt: string;
  durationS?: number;
  notes: string[];
}

/** BenchResults is latest.json. */
export interface BenchResults {
  machine: Machine;
  results: ResultRow[];
}

/** summaryFields turns a Summary into rounded row fields. */
export function summaryFields(s: Summary, digits = 3): Pick<ResultRow, 'n' | 'p50' | 'p90' | 'p99' | 'max' | 'mean'> {
  return { n: s.n, p50: round(s.p50, digits), p90: round(s.p90, digits), p99: round(s.p99, digits), max: round(s.max, digits), mean: round(s.mean, digits) };
}

/** Results collects rows as measurements finish, and logs each one as a line. */
export class Results {
  readonly rows: ResultRow[] = [];
  add(row: ResultRow): void {
    this.rows.push(row);
    const fig =
      row.value !== undefined
        ? `${row.value} ${row.unit}`
        : `p50 ${row.p50} / p99 ${row.p99} / max ${row.max} ${row.unit} (n=${row.n})`;
    process.stdout.write(`  ${row.system.padEnd(24)} ${row.metric}${row.leases ? ` [${row.leases} leases]` : ''}: ${fig}${row.computed ? ' (computed)' : ''}\n`);
  }
  find(system: string, metric: Metric, leases?: number): ResultRow | undefined {
    return this.rows.find((r) => r.system === system && r.metric === metric && (leases === undefined || r.leases === leases));
  }
}
