/**
 * chaos/run.ts — `npm run chaos -- --store KIND [--candidates N] [--duration D] [--faults LIST]
 * [--seed S] [--shards N] [--json FILE]`: a Jepsen-style hunt for mutual-exclusion violations.
 *
 * With --shards N the candidates are members of one ShardGroup (src/shards/) instead of
 * electors of one lock; every shard has its own fenced register and is judged as a lock of its
 * own (shard-check.ts).
 *
 * It starts the store's server (infra/servers/), the fenced register, one partition
 * proxy per candidate for network stores, and N candidate processes; injects the seeded fault
 * schedule for the given duration; lets the last failover settle; stops everything; and has
 * the checker judge the logs. Markdown goes to stdout, the full result to --json.
 *
 * Exit codes: 0 no violation; 1 a violation (accepted stale write, term that did not grow,
 * lease overlap, gap over the bound, fault without effect); 64 usage; 69 a server or the
 * first election could not be had; 78 a store baton cannot open yet.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CommanderError } from 'commander';
import { BatonError, StoreUnavailableError, errorMessage } from '../src/core/errors.js';
import { ExitCode, exitCodeFor } from '../src/cli/exit-codes.js';
import { monoMs, sleepMs } from './clock.js';
import { checkRun, type ChaosResult, type RunMeta } from './checker.js';
import { checkShardRun } from './shard-check.js';
import { JsonlWriter, type HarnessEvent } from './events.js';
import { FaultInjector, WALL_OFFSETS, planFaults, type CandidateLinks } from './faults.js';
import { Fleet } from './fleet.js';
import { LOOPBACK_PARTITIONS, parseChaosArgs, type ChaosOptions } from './options.js';
import { LINK_VARIANTS, PARTITION_VARIANTS } from '../infra/netns.js';
import { PartitionProxy } from '../infra/proxy.js';
import { NetTopology } from '../infra/netns.js';
import { Random } from './random.js';
import { RegisterClient } from './register-client.js';
import { renderReport } from './report.js';
import { STORE_KINDS, type RunningStore } from './stores.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const LOCK = 'chaos/leader';
/** The shard group of a shard-mode run: shard i is the lock `chaos/shard/i`. */
const GROUP = 'chaos';

/** cleanups run in reverse on exit, including Ctrl-C. */
const cleanups: (() => Promise<void> | void)[] = [];

async function runChaos(o: ChaosOptions): Promise<ChaosResult> {
  const dir = mkdtempSync(join(tmpdir(), `baton-chaos-${o.kind.name}-`));
  const meta: RunMeta = {
    store: o.kind.name,
    seed: o.seed,
    candidates: o.candidates,
    timing: o.timing,
    faultKinds: o.faults,
    command: replayCommand(o),
    ...(o.shards ? { shards: o.shards } : {}),
    ...(o.net === 'netns' ? { net: o.net } : {}),
  };
  writeFileSync(join(dir, 'run.json'), JSON.stringify(meta, null, 2));
  const log = new JsonlWriter<HarnessEvent>(join(dir, 'harness.jsonl'));
  process.stderr.write(`chaos: ${o.kind.name}, seed ${o.seed}, ${o.candidates} candidates${o.shards ? ` × ${o.shards} shards` : ''}, ${o.trials !== undefined ? `${o.trials} trial(s)` : exactDuration(o.durationMs)} of ${o.faults.join(', ') || 'no faults'}; logs in ${dir}\n`);

  // --net netns: every candidate, the store and the register on a host of its own (infra/netns.ts).
  let net: NetTopology | undefined;
  if (o.net === 'netns') {
    net = NetTopology.create([...Array.from({ length: o.candidates }, (_, i) => `c${i}`), 'store', 'register']);
    cleanups.push(() => net!.destroy());
  }

  let store: RunningStore;
  try {
    store = net ? await o.kind.startPlaced!(net.host('store').address, (bin, args) => net!.wrap('store', bin, args)) : await o.kind.start(dir);
  } catch (err) {
    throw new StoreUnavailableError(`chaos: the ${o.kind.name} server did not start: ${errorMessage(err)}`);
  }
  cleanups.push(() => store.stop());

  const registerHost = net?.host('register').address;
  const registerPort = await startRegister(join(dir, 'register.jsonl'), net && ((bin, args) => net!.wrap('register', bin, args)), registerHost);
  const register = new RegisterClient(registerPort, registerHost);
  await register.connect();
  cleanups.push(() => register.close());

  // Network stores: each candidate reaches the store, and the register, through its own proxies,
  // so a partition cuts it off from both, as a real network partition would.
  let proxies: CandidateLinks[] | undefined;
  if (store.port !== undefined && !net) {
    proxies = [];
    for (let i = 0; i < o.candidates; i++) {
      const links = { store: new PartitionProxy(store.port), register: new PartitionProxy(registerPort) };
      await links.store.listen();
      await links.register.listen();
      proxies.push(links);
    }
    cleanups.push(() => Promise.all(proxies!.flatMap((l) => [l.store.close(), l.register.close()])).then(() => {}));
  }

  const wallOffsets = o.faults.includes('clock') ? Array.from({ length: o.candidates }, (_, i) => WALL_OFFSETS[i % 3]!) : undefined;
  const fleet = new Fleet({
    count: o.candidates,
    dir,
    lock: o.shards ? GROUP : LOCK,
    shards: o.shards,
    register: o.faults.includes('handover'),
    prefer: o.faults.includes('handover'),
    registerPortFor: (slot) => (proxies ? proxies[slot]!.register.port : registerPort),
    registerHost,
    wrap: net && ((slot, bin, args) => net!.wrap(`c${slot}`, bin, args)),
    timing: o.timing,
    writeEveryMs: o.writeEveryMs,
    storeUrlFor: (slot) => (proxies ? store.urlVia(proxies[slot]!.store.port) : store.url),
    wallOffsets: wallOffsets ? [...wallOffsets] : undefined,
    log,
  });
  cleanups.push(() => fleet.killAll());
  fleet.startAll();

  // The window opens with the first leader the register hears from.
  const firstBy = monoMs() + 60_000;
  while (!(await register.lastWriter())) {
    if (monoMs() > firstBy) throw new StoreUnavailableError('chaos: no candidate was elected within 60s (see the candidates\' errors above)');
    await sleepMs(50);
  }
  log.write({ ev: 'window', t: monoMs(), edge: 'start', hostSkewMs: Date.now() - monoMs() });

  const injector = new FaultInjector({
    fleet,
    store,
    storeFaults: o.storeFaults,
    proxies,
    register,
    log,
    wallOffsets,
    lock: LOCK,
    partitionVariants: o.partitionVariants,
    linkVariants: o.linkVariants,
    net,
  });
  cleanups.push(() => injector.close());
  const endAt = o.trials === undefined ? monoMs() + o.durationMs : 0;
  if (o.faults.length > 0) {
    for (const plan of planFaults(new Random(o.seed), o.faults, o.timing, { atLeader: o.atLeader })) {
      if (o.trials !== undefined && plan.id > o.trials) break;
      await injector.settle(plan, 4 * (o.timing.leaseDurationMs + o.timing.retryPeriodMs));
      // --duration is a minimum: the first round always completes, so every kind is tried once.
      const roundDone = o.faults.every((k) => injector.counts[k] > 0);
      if (o.trials === undefined && roundDone && monoMs() + plan.holdMs > endAt) break;
      await injector.run(plan);
    }
  }
  // Let the last fault's failover finish inside the window.
  await sleepMs(Math.max(endAt - monoMs(), 0) + 2 * (o.timing.leaseDurationMs + o.timing.retryPeriodMs));
  log.write({ ev: 'window', t: monoMs(), edge: 'end' });

  debug('stopping candidates');
  await fleet.stopAll();
  debug('stopping register');
  await register.request('END');
  debug('cleanups');
  await runCleanups();
  log.close();
  debug('checking');
  return meta.shards ? checkShardRun(dir, meta) : checkRun(dir, meta);
}

/** startRegister runs chaos/register.ts as its own process (on its own host under --net netns) and resolves with its port. */
function startRegister(logPath: string, wrap?: (bin: string, args: string[]) => { bin: string; args: string[] }, host?: string): Promise<number> {
  const command = { bin: process.execPath, args: ['--import', 'tsx', fileURLToPath(new URL('./register.ts', import.meta.url)), logPath, ...(host ? [host] : [])] };
  const { bin, args } = wrap ? wrap(command.bin, command.args) : command;
  const child: ChildProcess = spawn(bin, args, {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  cleanups.push(() => {
    child.stdin?.end();
    setTimeout(() => child.kill('SIGKILL'), 2000).unref();
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /PORT (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`chaos: the register exited (${code}) before listening`)));
  });
}

function replayCommand(o: ChaosOptions): string {
  const t = o.timing;
  return [
    'npm run chaos --',
    `--store ${o.kind.name}`,
    ...(o.net !== 'loopback' ? [`--net ${o.net}`] : []),
    `--candidates ${o.candidates}`,
    o.trials !== undefined ? `--trials ${o.trials}` : `--duration ${exactDuration(o.durationMs)}`,
    `--faults ${o.faults.join(',') || 'none'}`,
    ...(o.faults.includes('partition') && o.partitionVariants.length < (o.net === 'netns' ? PARTITION_VARIANTS.length : LOOPBACK_PARTITIONS.length) ? [`--partition ${o.partitionVariants.join(',')}`] : []),
    ...(o.faults.includes('link') && o.linkVariants.length < LINK_VARIANTS.length ? [`--link ${o.linkVariants.join(',')}`] : []),
    ...(o.atLeader ? ['--at-leader'] : []),
    ...(o.storeFaults.join(',') !== o.kind.storeFaults.join(',') ? [`--store-faults ${o.storeFaults.join(',')}`] : []),
    `--seed ${o.seed}`,
    `--lease ${t.leaseDurationMs}ms --renew-deadline ${t.renewDeadlineMs}ms --retry-period ${t.retryPeriodMs}ms`,
    ...(o.shards ? [`--shards ${o.shards} --write-every ${o.writeEveryMs}ms`] : []),
  ].join(' ');
}

/** exactDuration writes ms in the largest unit that divides it, so a replay runs exactly as long. */
function exactDuration(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

const debug = (what: string) => {
  if (process.env.CHAOS_DEBUG) process.stderr.write(`chaos: ${what}\n`);
};

async function runCleanups(): Promise<void> {
  while (cleanups.length) {
    try {
      debug(`cleanup ${cleanups.length}`);
      await cleanups.pop()!();
    } catch {
      // best effort: the rest must still run
    }
  }
}

async function main(): Promise<number> {
  let o: ChaosOptions;
  try {
    o = parseChaosArgs(process.argv.slice(2));
  } catch (err) {
    if (err instanceof CommanderError) return 0; // --help
    throw err;
  }
  let result: ChaosResult;
  if (o.checkDir) {
    const meta = JSON.parse(readFileSync(join(o.checkDir, 'run.json'), 'utf8')) as RunMeta;
    // Whether a store is a queue store is a fact of the store, not of the run: logs kept before a
    // kind was marked so are judged as the kind is now.
    if (STORE_KINDS[meta.store]?.queue) meta.timing = { ...meta.timing, queue: true };
    result = meta.shards ? checkShardRun(o.checkDir, meta) : checkRun(o.checkDir, meta);
  } else {
    result = await runChaos(o);
    if (result.ok && !o.keepLogs) {
      rmSync(result.logDir, { recursive: true, force: true });
      result.logDir = '';
    }
  }
  process.stdout.write(renderReport(result));
  if (o.json) writeFileSync(o.json, JSON.stringify(result, null, 2) + '\n');
  return result.ok ? 0 : 1;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`chaos: ${signal}, stopping\n`);
    void runCleanups().finally(() => process.exit(130));
  });
}

main().then(
  (code) => process.exit(code),
  async (err) => {
    await runCleanups();
    const code = exitCodeFor(err);
    process.stderr.write(`${errorMessage(err)}\n`);
    process.exit(code);
  },
);
