/**
 * The targets baton is held to, evaluated against a run's rows. These are the bench's report
 * card, never test assertions: timings depend on the machine and what else runs on it.
 */
import type { BenchResults, ResultRow } from './results.js';
import { FAILOVER_TIMING } from './measure/failover.js';
import { STORE_KINDS } from './stores.js';

/** Verdict is one line of the targets table. */
export interface Verdict {
  target: string;
  system: string;
  measured: string;
  met: boolean | undefined;
}

const fmt = (x: number | undefined, digits = 1) => (x === undefined || !Number.isFinite(x) ? 'n/a' : x >= 100 ? Math.round(x).toString() : x.toFixed(digits));

/** evaluateTargets returns one verdict per target × store (or peer comparison). */
export function evaluateTargets(r: BenchResults): Verdict[] {
  const rows = r.results;
  const find = (system: string, metric: ResultRow['metric'], leases?: number) =>
    rows.find((x) => x.system === system && x.metric === metric && (leases === undefined || x.leases === leases));
  const stores = [...new Set(rows.filter((x) => x.system.startsWith('baton-')).map((x) => x.store))];
  const out: Verdict[] = [];

  for (const store of stores.filter((s) => s !== 'sqlite')) {
    const h = find(`baton-${store}`, 'graceful_handover_ms');
    const rtt = find(`baton-${store}`, 'store_rtt_ms');
    if (!h || !rtt) continue;
    const bound = 3 * rtt.p50!;
    out.push({
      target: 'graceful handover p99 ≤ 3 × store RTT (p50)',
      system: `baton-${store}`,
      measured: `p99 ${fmt(h.p99)} ms vs 3 × ${fmt(rtt.p50, 2)} = ${fmt(bound, 2)} ms (p50 ${fmt(h.p50)} ms = ${fmt(h.p50! / rtt.p50!)} × RTT)`,
      met: h.p99! <= bound,
    });
  }

  const batonRedis = find('baton-redis', 'graceful_handover_ms');
  for (const peer of ['redlock', 'redis-semaphore']) {
    const p = find(peer, 'graceful_handover_ms');
    if (!batonRedis || !p) continue;
    out.push({
      target: `graceful handover ≥ 20× faster than ${peer} (defaults)`,
      system: 'baton-redis',
      measured: `p50 ${fmt(p.p50! / batonRedis.p50!)}× faster (${fmt(batonRedis.p50, 2)} vs ${fmt(p.p50, 2)} ms); p99 ${fmt(p.p99! / batonRedis.p99!)}×`,
      met: p.p50! / batonRedis.p50! >= 20,
    });
  }

  const batonEtcd = find('baton-etcd', 'graceful_handover_ms');
  const e3 = find('etcd3-election', 'graceful_handover_ms');
  if (batonEtcd && e3) {
    out.push({
      target: "graceful handover within 1.2× of etcd3's Election",
      system: 'baton-etcd',
      measured: `p50 ${fmt(batonEtcd.p50, 2)} vs ${fmt(e3.p50, 2)} ms (${fmt(batonEtcd.p50! / e3.p50!, 2)}×); p99 ${fmt(batonEtcd.p99, 2)} vs ${fmt(e3.p99, 2)} ms`,
      met: batonEtcd.p50! <= 1.2 * e3.p50! && batonEtcd.p99! <= 1.2 * e3.p99!,
    });
  }

  for (const store of stores) {
    const f = find(`baton-${store}`, 'crash_failover_from_renewal_ms');
    const k = find(`baton-${store}`, 'crash_failover_ms');
    const rtt = find(`baton-${store}`, 'store_rtt_ms');
    if (!f || !rtt) continue;
    const lease = Number(f.detail?.leaseDurationMs ?? FAILOVER_TIMING.leaseDurationMs);
    const bound = lease + rtt.p50! + 20;
    out.push({
      target: 'crash failover ≤ lease + 1 RTT + 20 ms (from the last renewal)',
      system: `baton-${store}`,
      measured: `max ${fmt(f.max)} ms, p50 ${fmt(f.p50)} ms vs ${fmt(bound)} ms (from the kill: p50 ${fmt(k?.p50)}, max ${fmt(k?.max)} ms; n=${f.n})`,
      met: f.max! <= bound,
    });
  }

  // Stores without a change feed poll by design (one read per retry period): not judged here.
  const polls = new Set(STORE_KINDS.filter((k) => !k.notifies).map((k) => k.name));
  for (const store of stores.filter((s) => !polls.has(s))) {
    const i = find(`baton-${store}`, 'idle_standby_rps');
    if (!i) continue;
    const extra = store === 'sqlite' && i.detail?.sqlStatementsPerS !== undefined ? ` (store calls; ${i.detail.sqlStatementsPerS} SQL statements/s in-process)` : '';
    out.push({ target: 'idle standby 0 requests/s on notifying stores', system: `baton-${store}`, measured: `${i.value} requests/s${extra}`, met: i.value === 0 });
  }

  const most = Math.max(0, ...rows.filter((x) => x.leases !== undefined).map((x) => x.leases!));
  for (const store of stores) {
    const rt = find(`baton-${store}`, 'leader_round_trips_per_renew', most);
    const cpu = find(`baton-${store}`, 'cpu_percent', most);
    const rss = find(`baton-${store}`, 'rss_mb', most);
    if (!rt || !cpu || !rss) continue;
    out.push({
      target: `${most.toLocaleString('en-US')} leases: 1 round trip per renew interval, < 5 % of a core, < 150 MB RSS`,
      system: `baton-${store}`,
      measured: `${rt.value} round trips/${rt.detail?.renewCycles === 0 ? '2 s (no renewal succeeded)' : 'cycle'}, ${cpu.value} % CPU, ${rss.value} MB; ${rt.detail?.leadingAtEnd ?? '?'} of ${most.toLocaleString('en-US')} held`,
      met: rt.value! <= 1 && cpu.value! < 5 && rss.value! < 150,
    });
  }

  for (const store of stores) {
    const h = find(`baton-${store}`, 'ops_per_candidate_per_failover');
    if (!h) continue;
    out.push({
      target: '≤ 2 store ops per candidate per failover',
      system: `baton-${store}`,
      measured: `${h.value} ops/candidate (most by one candidate: ${h.max})`,
      met: h.value! <= 2,
    });
  }
  return out;
}
