/**
 * The Markdown summary a chaos run prints: the verdict first, then the numbers, then one row
 * per fault with the leaderless time it caused.
 */
import { FAULT_KINDS } from './events.js';
import type { ChaosResult } from './checker.js';

/** renderReport renders a ChaosResult as Markdown. */
export function renderReport(r: ChaosResult): string {
  const t = r.timing;
  const ms = (x: number) => `${Number.isFinite(x) ? Math.round(x * 10) / 10 : '–'} ms`;
  const byKind = (m: ChaosResult['believedOverlapByFault']) => {
    const parts = Object.entries(m ?? {}).map(([k, v]) => `${k} ${ms(v!)}`);
    return parts.length ? `; after ${parts.join(', ')}` : '';
  };
  const longest = (spans: ChaosResult['believedOverlaps']) => (spans[0] ? ` (longest ${ms(spans[0].ms)}: ${spans[0].who.join(', ')})` : '');
  const lines = [
    `## baton chaos — ${r.store}, seed ${r.seed}: ${r.ok ? 'PASS' : 'FAIL'}`,
    '',
    '| | |',
    '|---|---|',
    `| window | ${(r.durationMs / 1000).toFixed(1)} s, ${r.candidates} candidates, lease ${t.leaseDurationMs} ms / renew deadline ${t.renewDeadlineMs} ms / retry ${t.retryPeriodMs} ms |`,
    `| failovers (new terms) | ${r.failovers} (holder changed ${r.holderChanges} times) |`,
    `| accepted stale writes | **${r.acceptedStaleWrites}** of ${r.acceptedWrites} accepted |`,
    `| stale writes rejected by fencing | ${r.rejectedStaleWrites} |`,
    `| terms that did not grow | ${r.termViolations.length} |`,
    `| isLeader() true in two processes | ${ms(r.leaseOverlapMs)} |`,
    `| closest handover (old leader's end → next acquiring write) | ${ms(r.minHandoverMarginMs)} |`,
    `| two processes believed they led | ${ms(r.believedOverlapMs)}${longest(r.believedOverlaps)}${byKind(r.believedOverlapByFault)} |`,
    `| store RTT (renewals outside faults) | p50 ${ms(r.rttMs.p50)}, p99 ${ms(r.rttMs.p99)}, max ${ms(r.rttMs.max)} (${r.rttMs.samples} samples) |`,
    `| gap bound (lease + ${t.pollMs ? `longest poll wait ${t.pollMs} ms` : 'retry'}${t.predecessorWaitMs ? ` + predecessor wait ${t.predecessorWaitMs} ms` : ''} + RTT p99${r.shards ? ' + retry (member found dead)' : ''}) | ${ms(r.boundMs)} |`,
    `| longest leaderless gap after a heal | ${ms(r.maxLeaderlessMs)} |`,
    `| gaps over the bound | ${r.gapsOverBound.length} |`,
    ...(r.shards ? [shardLine(r)] : []),
    `| faults | ${FAULT_KINDS.filter((k) => r.faults[k] > 0).map((k) => `${k} ${r.faults[k]}`).join(', ') || 'none'} |`,
    '',
  ];
  if (r.violations.length) {
    lines.push('### Violations', '', ...r.violations.map((v) => `- ${v}`));
    for (const s of r.staleWriteSamples) lines.push(`  - accepted token ${s.token} from ${s.from} at ${s.atMs} ms after ${s.newest} from ${s.newestFrom} (${s.n} writes)`);
    for (const v of r.termViolations) lines.push(`  - ${v.identity} acquired term ${v.term} at ${v.atMs} ms; ${v.previousMax} had been granted before`);
    for (const h of r.handoversTooEarly) lines.push(`  - ${h.to} started acquiring at ${h.atMs} ms, ${ms(-h.marginMs)} before ${h.from} stopped`);
    for (const o of r.leaseOverlaps) lines.push(`  - at ${o.startMs} ms for ${ms(o.ms)}: ${o.who.join(', ')}`);
    for (const g of r.gapsOverBound) lines.push(`  - ${g.shard !== undefined ? `shard ${g.shard}: ` : ''}gap at ${g.startMs} ms: ${ms(g.afterHealMs)} after heal (fault ${g.fault ? `#${g.fault.id} ${g.fault.kind} ${g.fault.variant}` : 'none'})`);
    for (const f of r.faultsNotSeen) lines.push(`  - ${f}`);
    lines.push('');
  }
  if (r.faultLog.length) {
    lines.push('### Faults', '', '| # | at | kind | variant | target | healed | leaderless (after heal) |', '|---|---|---|---|---|---|---|');
    for (const f of r.faultLog) {
      const gaps = r.gaps.filter((g) => g.fault?.id === f.id);
      // Shard mode: the longest per fault (every shard the fault touched has a gap).
      const shown = r.shards ? [...gaps].sort((a, b) => b.afterHealMs - a.afterHealMs).slice(0, 1) : gaps;
      const more = gaps.length > shown.length ? ` (longest of ${gaps.length} shards' gaps)` : '';
      const gap = shown.length ? shown.map((g) => `${g.shard !== undefined ? `s${g.shard} ` : ''}${ms(g.ms)} (${ms(g.afterHealMs)})${g.overBound ? ' **over**' : ''}`).join('; ') + more : '–';
      lines.push(`| ${f.id} | ${f.atMs} ms | ${f.kind} | ${f.variant} | ${f.target ?? 'store'} | ${f.healedAtMs ?? '–'} ms | ${gap} |`);
    }
    lines.push('');
  }
  lines.push(`Replay: \`${r.command}\``, `Logs: ${r.logDir || '(removed)'}`);
  return lines.join('\n') + '\n';
}

/** shardLine sums up a shard-mode run: per-shard stale writes and the slowest re-ownership. */
function shardLine(r: ChaosResult): string {
  const v = r.shards!;
  const stale = v.filter((s) => s.acceptedStaleWrites > 0).length;
  const slowest = [...v].sort((a, b) => b.maxOwnerlessMs - a.maxOwnerlessMs)[0];
  return `| shards | ${v.length}: accepted stale writes in ${stale} shard(s); every shard owned in the window: ${v.every((s) => s.elections > 0) ? 'yes' : 'no'}; longest ownerless after a heal ${slowest ? `${slowest.maxOwnerlessMs} ms (shard ${slowest.shard})` : '–'} |`;
}
