/**
 * The shard member child: one process, one store handle, one ShardGroup member. Started by
 * measure/shards.ts with BENCH_SHARD_MEMBER (JSON, see ShardMemberConfig); prints JSON lines.
 *
 * It opens the store and prints `ready`, and joins the group only on `go` (so a join is timed
 * from the moment the member starts, not from Node's own start-up). It prints `acquired` and
 * `released` for every shard it takes or gives up, and `members` whenever the live membership it
 * sees changes. `count` answers with a `count` line: store
 * calls so far (and SQL statements, for SQLite), renewal batches and the leases they carried, CPU
 * time, RSS, releases by reason, and the event loop's delay since the last count; `stop` leaves
 * the group and exits.
 */
import { createInterface } from 'node:readline';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { ShardGroup } from '../src/shards/group.js';
import { openStore } from '../src/stores/registry.js';
import { monoMs } from './clock.js';
import { countingStore, totalCalls } from './counting-store.js';
import { installSqliteStatementCounter, sqliteStatementSnapshot } from './sqlite-statements.js';

/** ShardMemberConfig is what measure/shards.ts passes in BENCH_SHARD_MEMBER. */
export interface ShardMemberConfig {
  storeUrl: string;
  group: string;
  shards: number;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

const config = JSON.parse(process.env.BENCH_SHARD_MEMBER ?? 'null') as ShardMemberConfig | null;
if (!config) {
  process.stderr.write('shard-member: BENCH_SHARD_MEMBER is not set (this process is started by bench/run.ts)\n');
  process.exit(64);
}
const emit = (e: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(e)}\n`);
const sqlite = config.storeUrl.startsWith('sqlite:');
if (sqlite) installSqliteStatementCounter();

const counted = countingStore(await openStore(config.storeUrl));
let storeErrors = 0;
let lastError = '';
/** Why this member's shards were released, by reason (a loop of losses shows as 'renew-deadline' or 'lost'). */
const releasedBy: Record<string, number> = {};
/** The event loop's delay since the last `count`: a starved or overloaded member shows here before it loses leases. */
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();
const group = new ShardGroup({
  store: counted.store,
  group: config.group,
  shards: config.shards,
  identity: config.identity,
  leaseDurationMs: config.leaseDurationMs,
  renewDeadlineMs: config.renewDeadlineMs,
  retryPeriodMs: config.retryPeriodMs,
});
group.on('acquired', ({ shard }) => emit({ ev: 'acquired', t: monoMs(), shard }));
group.on('released', ({ shard, reason }) => {
  releasedBy[reason] = (releasedBy[reason] ?? 0) + 1;
  emit({ ev: 'released', t: monoMs(), shard, reason });
});
// A member seen leaving and coming back (a late heartbeat) moves shards twice: count such views.
group.on('members', (view) => emit({ ev: 'members', t: monoMs(), live: view.live.length }));
group.on('storeError', (err) => {
  storeErrors++;
  lastError = err.message;
});
emit({ ev: 'ready', t: monoMs(), pid: process.pid });

createInterface({ input: process.stdin }).on('line', (line) => {
  const cmd = line.trim();
  if (cmd === 'go') {
    emit({ ev: 'go', t: monoMs() });
    group.start();
  } else if (cmd === 'count') {
    let sql = 0;
    const statements = sqlite ? Object.fromEntries(sqliteStatementSnapshot()) : {};
    for (const n of Object.values(statements)) sql += n;
    const cpu = process.cpuUsage();
    const calls = counted.snapshot();
    const delay = { p99Ms: loopDelay.percentile(99) / 1e6, maxMs: loopDelay.max / 1e6 };
    loopDelay.reset();
    emit({
      ev: 'count',
      t: monoMs(),
      calls: totalCalls(calls),
      renewBatches: calls.renewMany,
      renewItems: calls.renewItems,
      sql,
      statements,
      cpuMs: (cpu.user + cpu.system) / 1000,
      storeErrors,
      lastError,
      releasedBy,
      loopDelay: delay,
      rssMb: process.memoryUsage().rss / 2 ** 20,
    });
  } else if (cmd === 'stop') {
    void group.stop().finally(async () => {
      await counted.store.close().catch(() => {});
      process.exit(0);
    });
  }
});
process.stdin.on('end', () => process.exit(0));
