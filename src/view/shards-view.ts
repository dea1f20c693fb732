/**
 * shardGroupView presents a shard group for `baton status --group`, the sidecar's `/shards`
 * and the dashboard alike: each shard's intended owner and its actual owner (through leaseView,
 * so an expired holder reads as free everywhere), why its last owner stepped down if the ledger
 * says (hung work, docs/watchdog.md), and each member with its counts.
 */
import type { ShardGroupStatus } from '../shards/status.js';
import { describeStepDown, type LastStepDown } from '../core/hang-backoff.js';
import { leaseView, type LeaseViewOptions } from './lease-view.js';

/** ShardGroupView is the JSON shape of one group. */
export interface ShardGroupView {
  group: string;
  shards: number;
  members: { identity: string; left: boolean; assigned: number; owned: number }[];
  assignment: { shard: number; assigned: string | null; owner: string | null; term: number; expiresInMs: number | null; lastStepDown: LastStepDown | null }[];
}

/** shardGroupView: see the file comment. */
export function shardGroupView(status: ShardGroupStatus, options: LeaseViewOptions = {}): ShardGroupView {
  const assignment = status.records.map((record, shard) => {
    const view = record ? leaseView(record, options) : null;
    return {
      shard,
      assigned: status.assigned[shard] || null,
      owner: view?.holder ?? null,
      term: view?.term ?? 0,
      expiresInMs: view?.expiresInMs ?? null,
      lastStepDown: status.stepDowns[shard] ?? null,
    };
  });
  const members = status.members.map((m) => ({
    identity: m.identity,
    left: m.left,
    assigned: assignment.filter((a) => a.assigned === m.identity).length,
    owned: assignment.filter((a) => a.owner === m.identity).length,
  }));
  return { group: status.group, shards: status.shards, members, assignment };
}

/** renderShardGroup is the text form: one line per member, then one per shard (and one for its last step-down, if any). */
export function renderShardGroup(v: ShardGroupView): string {
  const lines = [`group ${v.group}: ${v.shards} shards, ${v.members.filter((m) => !m.left).length} members`];
  for (const m of v.members) lines.push(`  member ${m.identity}${m.left ? ' (left)' : ''}: owns ${m.owned}, assigned ${m.assigned}`);
  for (const a of v.assignment) {
    const who = a.owner ? `${a.owner} (term ${a.term})` : 'nobody';
    const moving = a.assigned && a.assigned !== a.owner ? `, moving to ${a.assigned}` : '';
    lines.push(`  shard ${a.shard}: ${who}${moving}`);
    if (a.lastStepDown) lines.push(`    last step-down: ${describeStepDown(a.lastStepDown)}`);
  }
  return `${lines.join('\n')}\n`;
}
