/**
 * One bench candidate: a real OS process running a LeaderElector over openStore, started by
 * the bench (`node --import tsx bench/candidate.ts`, configured by the BENCH_CANDIDATE
 * environment variable, see CandidateConfig). Crash-failover runs kill it with SIGKILL; the
 * idle-standby run reads its call counts.
 *
 * It prints one JSON line per event on stdout, stamped on the host's CLOCK_MONOTONIC (monoMs),
 * which every process on the host shares: `ready`, `started`, `write` (the start of every call
 * that can extend a lease — write, renewMany, renewRevisions — sent or not answered yet),
 * `elected`, `renewed`, `leader`, `stopped`, `counts`. stdout is a pipe, and pipes are written
 * synchronously on Linux, so every line printed before a SIGKILL reaches the bench.
 *
 * Commands on stdin, one per line: `go` starts campaigning (when started with hold), `counts`
 * prints the store calls and SQLite statements so far, `stop` stops (releasing) and exits.
 */
import { createInterface } from 'node:readline';
import { LeaderElector } from '../src/core/elector.js';
import { openStore } from '../src/stores/registry.js';
import { monoMs, PERF_TO_MONO_MS } from './clock.js';
import { countingStore } from './counting-store.js';
import { installSqliteStatementCounter, sqliteStatementSnapshot } from './sqlite-statements.js';

/** CandidateConfig is what the bench passes in BENCH_CANDIDATE (JSON). */
export interface CandidateConfig {
  storeUrl: string;
  lock: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** Open the store, print `ready`, and wait for `go` before campaigning. */
  hold?: boolean;
}

const config = JSON.parse(process.env.BENCH_CANDIDATE ?? 'null') as CandidateConfig | null;
if (!config) {
  process.stderr.write('candidate: BENCH_CANDIDATE is not set (this process is started by bench/run.ts)\n');
  process.exit(64);
}
const emit = (e: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(e)}\n`);

if (config.storeUrl.startsWith('sqlite:')) installSqliteStatementCounter();
const counted = countingStore(await openStore(config.storeUrl));
const countedWrite = counted.store.write.bind(counted.store);
// Every call that could extend the lease is stamped when it is sent: a kill may land while one
// is in flight, and the server may still apply it.
counted.store.write = (lock, expected, next) => {
  emit({ ev: 'write', t: monoMs(), newTerm: next.newTerm, release: next.holder === null });
  return countedWrite(lock, expected, next);
};
// Renewals go through the batch calls when the store has them (renewRevisions on SQLite and
// Redis): stamp those too, or the "last write" would be the acquisition.
const countedRenewRevisions = counted.store.renewRevisions?.bind(counted.store);
if (countedRenewRevisions) {
  counted.store.renewRevisions = (items) => {
    emit({ ev: 'write', t: monoMs(), newTerm: false, release: false });
    return countedRenewRevisions(items);
  };
}
const countedRenewMany = counted.store.renewMany?.bind(counted.store);
if (countedRenewMany) {
  counted.store.renewMany = (requests) => {
    emit({ ev: 'write', t: monoMs(), newTerm: false, release: false });
    return countedRenewMany(requests);
  };
}
const elector = new LeaderElector({
  store: counted.store,
  lock: config.lock,
  identity: config.identity,
  leaseDurationMs: config.leaseDurationMs,
  renewDeadlineMs: config.renewDeadlineMs,
  retryPeriodMs: config.retryPeriodMs,
});
elector.on('elected', ({ term }) => {
  emit({ ev: 'elected', t: monoMs(), term, acquireStart: (elector.leadershipWindow()?.renewStartMs ?? NaN) + PERF_TO_MONO_MS });
});
elector.on('renewed', ({ term }) => {
  emit({ ev: 'renewed', t: monoMs(), term, start: (elector.leadershipWindow()?.renewStartMs ?? NaN) + PERF_TO_MONO_MS });
});
elector.on('leader', ({ holder, term }) => emit({ ev: 'leader', t: monoMs(), holder, term }));
elector.on('stopped', ({ term, reason }) => emit({ ev: 'stopped', t: monoMs(), term, reason }));
elector.on('storeError', () => {});

emit({ ev: 'ready', t: monoMs(), pid: process.pid, queue: !!counted.store.queue });
const begin = () => {
  elector.start();
  emit({ ev: 'started', t: monoMs() });
};
if (!config.hold) begin();

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await Promise.race([elector.stop(), new Promise((r) => setTimeout(r, 3000))]);
  await Promise.race([counted.store.close(), new Promise((r) => setTimeout(r, 1000))]);
  emit({ ev: 'exit', t: monoMs() });
  process.exit(0);
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const cmd = line.trim();
  if (cmd === 'go') begin();
  else if (cmd === 'counts') emit({ ev: 'counts', t: monoMs(), calls: counted.snapshot(), statements: Object.fromEntries(sqliteStatementSnapshot()) });
  else if (cmd === 'stop') void stop();
});
process.stdin.on('end', () => void stop());
process.on('SIGTERM', () => void stop());
