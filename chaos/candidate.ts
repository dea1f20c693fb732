/**
 * One chaos candidate: a real OS process running the library's LeaderElector (or, in shard
 * mode, a ShardGroup member: chaos/leading.ts) over openStore,
 * started by the harness (`node --import tsx chaos/candidate.ts`, configured through the
 * CHAOS_CANDIDATE environment variable, see CandidateConfig).
 *
 * While `elector.isLeader()` says so — checked synchronously right before each write, as an
 * application would — it writes its fencing token to the register every few ms (in shard mode,
 * each owned shard's term to that shard's register). It logs its
 * leadership (elected / renewed with the new deadline / stopped) on the shared monotonic
 * timeline, and its wall-clock skew whenever that jumps, so the checker can confirm that
 * libfaketime jumps took effect.
 *
 * Commands on stdin, one per line: `stall <ms>` blocks the event loop (a GC pause, a CPU
 * hog); `stop` stops the elector (releasing the lease) and exits.
 */
import { createInterface } from 'node:readline';
import { openStore } from '../src/stores/registry.js';
import { errorMessage } from '../src/core/errors.js';
import type { LeaseStore } from '../src/core/store.js';
import { monoMs, sleepMs } from './clock.js';
import { JsonlWriter, type CandidateEvent } from './events.js';
import { electorLeading, shardLeading } from './leading.js';
import { RegisterClient } from './register-client.js';

/** CandidateConfig is what the harness passes in CHAOS_CANDIDATE (JSON). */
export interface CandidateConfig {
  storeUrl: string;
  lock: string;
  identity: string;
  registerPort: number;
  /** The register's address (default 127.0.0.1; --net netns: the register host's). */
  registerHost?: string;
  logPath: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** Interval between register writes while leading. */
  writeEveryMs: number;
  /** Shard mode: run a ShardGroup member of group `lock` with this many shards. */
  shards?: number;
  /** Register in the candidate registry (handover faults name candidates there). */
  register?: boolean;
  /** With `register`: this incarnation's priority, and the preference rule 'priority' for all (handover faults' `prefer` variant). */
  priority?: number;
  prefer?: 'priority';
}

const config = JSON.parse(process.env.CHAOS_CANDIDATE ?? 'null') as CandidateConfig | null;
if (!config) {
  process.stderr.write('candidate: CHAOS_CANDIDATE is not set (this process is started by chaos/run.ts)\n');
  process.exit(64);
}
const log = new JsonlWriter<CandidateEvent>(config.logPath);
const emit = (e: CandidateEvent) => log.write(e);
const skew = () => Date.now() - monoMs();

emit({ ev: 'start', t: monoMs(), identity: config.identity, pid: process.pid, skewMs: skew() });

// Wall-clock sampler: a jump of more than a second is logged, so clock faults can be verified.
let lastSkew = skew();
emit({ ev: 'wall', t: monoMs(), skewMs: lastSkew });
const wallTimer = setInterval(() => {
  const s = skew();
  if (Math.abs(s - lastSkew) > 1000) emit({ ev: 'wall', t: monoMs(), skewMs: s });
  lastSkew = s;
}, 100);

// Store errors are frequent during faults; one line per quarter second is enough to read.
let errors = 0;
let lastError = '';
const errorTimer = setInterval(() => {
  if (errors === 0) return;
  emit({ ev: 'store-error', t: monoMs(), count: errors, message: lastError });
  errors = 0;
}, 250);

async function openWithRetry(): Promise<LeaseStore> {
  for (;;) {
    try {
      return await openStore(config!.storeUrl);
    } catch (err) {
      errors++;
      lastError = `open: ${errorMessage(err)}`;
      await sleepMs(200);
    }
  }
}

const store = await openWithRetry();
const leadingOptions = {
  store,
  lock: config.lock,
  identity: config.identity,
  leaseDurationMs: config.leaseDurationMs,
  renewDeadlineMs: config.renewDeadlineMs,
  retryPeriodMs: config.retryPeriodMs,
  register: config.register === true,
  ...(config.priority !== undefined ? { priority: config.priority } : {}),
  ...(config.prefer ? { prefer: config.prefer } : {}),
  emit,
  onStoreError(err: Error) {
    errors++;
    lastError = errorMessage(err);
  },
};
const leading = config.shards ? shardLeading(leadingOptions, config.shards) : electorLeading(leadingOptions);

// The register is reached through a proxy that partitions can reset: reconnect until stopped.
const register = new RegisterClient(config.registerPort, config.registerHost);
let stopping = false;
async function keepRegisterConnected(): Promise<void> {
  while (!stopping) {
    if (!register.connected) await register.connect().catch(() => {});
    await sleepMs(100);
  }
}
void keepRegisterConnected();
/** Registers with a write in flight: one at a time per register, as one worker per shard would. */
const inFlight = new Set<string>();
const writeTimer = setInterval(() => {
  if (!register.connected) return;
  // The check and the send happen in one synchronous step, as in an application.
  for (const { key, term } of leading.writable()) {
    const k = key ?? '';
    if (inFlight.has(k)) continue;
    inFlight.add(k);
    void register.request(`W ${term} ${config.identity}${key ? ` ${key}` : ''}`).then((answer) => {
      inFlight.delete(k);
      if (answer.startsWith('STALE')) emit({ ev: 'fenced', t: monoMs(), term, newest: Number(answer.split(' ')[1]) });
    });
  }
}, config.writeEveryMs);

leading.start();

async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  clearInterval(writeTimer);
  await Promise.race([leading.stop(), sleepMs(3000)]);
  await Promise.race([store.close(), sleepMs(1000)]);
  clearInterval(wallTimer);
  clearInterval(errorTimer);
  register.close();
  emit({ ev: 'exit', t: monoMs() });
  log.close();
  process.exit(0);
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const [cmd, arg] = line.trim().split(/\s+/);
  if (cmd === 'stall') {
    const from = monoMs();
    const until = from + Number(arg);
    emit({ ev: 'stall', t: from, until });
    while (monoMs() < until) {
      // Busy on purpose: nothing else in this process runs until the stall ends.
    }
  } else if (cmd === 'stop') {
    void stop();
  }
});
process.stdin.on('end', () => void stop());
process.on('SIGTERM', () => void stop());
