/**
 * `baton explain`: what a store URL and timing options mean, in plain words and numbers (the
 * arithmetic is in ../explain.ts). It measures the store's round trip with a few reads of a
 * lock nobody uses, and says so when it cannot; it never writes, and never creates a store.
 */
import { existsSync } from 'node:fs';
import { examples } from '../help.js';
import { Command } from 'commander';
import { errorMessage } from '../../core/errors.js';
import { formatDuration } from '../../core/duration.js';
import type { LeaseStore } from '../../core/store.js';
import { defaultStoreUrl, parseStoreUrl } from '../../stores/registry.js';
import { CliExit, resolveTimingOptions, withStoreOption, withTimingOptions, type CommonOptions } from '../common.js';
import { explain, HANDOVER_ROUND_TRIPS, type Explanation, type StoreFacts } from '../explain.js';

const PROBE_LOCK = 'baton-explain-probe';
const PROBES = 7;
/** etcd revokes expired leases on a half-second sweep. */
const SWEEP_MS: Record<string, number> = { etcd: 500 };

/** register adds `baton explain`. */
export function register(program: Command): void {
  const cmd = program
    .command('explain')
    .summary('say what a store and timing mean: failover, handover, safety margin, load')
    .description(
      'For the store and the timing options given, print the worst-case crash failover, the graceful ' +
        'handover (measured round trip × the store\'s round trips), the safety margin lease − renew deadline ' +
        'and what it protects against, the store requests per second of the leader and of each standby, ' +
        'and warnings for risky settings. The round trip is measured with a few reads when the store is ' +
        'reachable; nothing is written.',
    )
    .option('--json', 'print the figures as JSON')
    .addHelpText(
      'after',
      examples([
        ['what a Redis store with these timings gives', 'baton explain --store redis://cache:6379 --lease-duration 5s --renew-deadline 3s --retry-period 1s'],
        ['the defaults, for a script', 'baton explain --json'],
      ]),
    );
  withStoreOption(cmd);
  withTimingOptions(cmd);
  cmd.action(async (opts: CommonOptions & { json?: boolean }) => {
    const timing = resolveTimingOptions(opts);
    const url = opts.store ?? defaultStoreUrl();
    const parsed = parseStoreUrl(url);
    const probe = await measure(parsed);
    const result = explain(timing, probe.facts);
    const out = { store: parsed.label, measured: probe.note === undefined, note: probe.note ?? null, ...result };
    process.stdout.write(opts.json ? `${JSON.stringify(out, null, 2)}\n` : render(out, probe));
    throw new CliExit(0);
  });
}

interface Probe {
  facts: StoreFacts;
  kind: string;
  note?: string;
}

/** measure opens the store (unless that would create it) and times a few reads. */
async function measure(parsed: ReturnType<typeof parseStoreUrl>): Promise<Probe> {
  const defaults: StoreFacts = { notifies: true, serverExpiry: false };
  if (parsed.descriptor.name === 'sqlite' && typeof parsed.config === 'string' && parsed.config !== ':memory:' && !existsSync(parsed.config)) {
    return { facts: defaults, kind: 'sqlite', note: `no store at ${parsed.config} yet: round trip not measured` };
  }
  let store: LeaseStore | undefined;
  try {
    store = await parsed.descriptor.open(parsed.config, {});
    const times: number[] = [];
    for (let i = 0; i < PROBES; i++) {
      const t0 = performance.now();
      await store.read(PROBE_LOCK);
      times.push(performance.now() - t0);
    }
    // The first read may open a connection: not a round trip.
    const steady = times.slice(1).sort((a, b) => a - b);
    const facts: StoreFacts = {
      notifies: typeof store.watch === 'function',
      serverExpiry: store.capabilities.serverExpiry,
      leaseGranularityMs: store.capabilities.leaseGranularityMs,
      expirySweepMs: SWEEP_MS[store.kind],
      rttMs: { p50: steady[Math.floor(steady.length / 2)]!, max: steady[steady.length - 1]! },
      presence: !!store.presence,
    };
    return { facts, kind: store.kind };
  } catch (err) {
    return { facts: defaults, kind: parsed.descriptor.name, note: `could not reach the store (${errorMessage(err)}): round trip not measured` };
  } finally {
    await store?.close().catch(() => {});
  }
}

function ms(x: number): string {
  if (x < 1) return `${x.toFixed(3)} ms`;
  return x < 10 ? `${x.toFixed(1)} ms` : formatDuration(Math.round(x));
}

function render(e: Explanation & { store: string; note: string | null }, probe: Probe): string {
  const f = probe.facts;
  const t = e.timing;
  const rtt = f.rttMs ? `round trip ${ms(f.rttMs.p50)} (max ${ms(f.rttMs.max)} over ${PROBES - 1} reads)` : (e.note ?? 'round trip not measured');
  const lines = [
    `store: ${e.store} (${probe.kind}; standbys ${f.notifies ? 'notified of changes' : 'poll'}; leases expire ${f.serverExpiry ? "on the server's timer" : 'by observation'}; ${rtt})`,
    `timing: lease ${formatDuration(t.leaseDurationMs)}${t.effectiveLeaseDurationMs !== t.leaseDurationMs ? ` (the store makes it ${formatDuration(t.effectiveLeaseDurationMs)})` : ''}, renew deadline ${formatDuration(t.renewDeadlineMs)}, retry period ${formatDuration(t.retryPeriodMs)} (jitter ×${t.jitterFactor})`,
    '',
    `crash failover     ${ms(e.crashFailoverMs.best)} to ${ms(e.crashFailoverMs.worst)} after the leader dies: a whole lease from its last renewal${f.notifies ? '' : ', noticed within a retry period'}, then one round trip`,
    e.gracefulHandoverMs
      ? `graceful handover  about ${ms(e.gracefulHandoverMs.typical)} (at worst ${ms(e.gracefulHandoverMs.worst)}): release, ${f.notifies ? 'notification' : 'the next poll'}, acquire — ${HANDOVER_ROUND_TRIPS} round trips, plus the store's own notification delay`
      : `graceful handover  ${HANDOVER_ROUND_TRIPS} round trips (release, notification, acquire); the round trip was not measured`,
    `safety margin      ${formatDuration(e.safetyMarginMs)}: a leader paused (GC, SIGSTOP, a stalled VM) or slowed for less than this still stops before anyone else starts; it absorbs clocks running up to ${Math.round(e.driftTolerance * 100)} % apart over one lease`,
    `renewals           ${e.renewalsBeforeStepDown} attempt(s) fit in the renew deadline before the leader steps down`,
    `store requests     the leader ${round(e.requestsPerSecond.leader)}/s; each standby ${round(e.requestsPerSecond.standby)}/s${f.notifies ? ' (it waits for notifications)' : ' (it polls)'}`,
    f.presence
      ? `candidate registry off unless run/serve/cron get --register, --app-version, --priority, --label or --prefer; then kept on each candidate's own lease or session: no request at rest, and with --prefer the leader ${round(e.registryPerSecond.preferLeaderLists)} lists/s (baton handover names registered candidates)`
      : `candidate registry off unless run/serve/cron get --register, --app-version, --priority, --label or --prefer; then each candidate ${round(e.registryPerSecond.perCandidate)} ledger writes/s, and the leader ${round(e.registryPerSecond.leaderLists)} ledger lists/s to prune it (${round(e.registryPerSecond.preferLeaderLists)} with --prefer) (baton handover names registered candidates)`,
    '',
    e.warnings.length ? e.warnings.map((w) => `warning: ${w}`).join('\n') : 'warnings: none',
  ];
  return `${lines.join('\n')}\n`;
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}
