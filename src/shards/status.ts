/**
 * readShardGroup reads a group's state for `baton status --group`, the sidecar and dashboards:
 * its shard count, its members as the ledger shows them, the assignment, every shard's lease
 * record, and why each shard's last owner stepped down, where the ledger keeps it (a member
 * whose work on the shard hung, core/hang-backoff.ts). It writes nothing. Liveness of members
 * is not judged here (that takes watching over a lease duration); each member's entry is shown
 * as it is.
 */
import { InvalidConfigError } from '../core/errors.js';
import type { LeaseRecord, LeaseStore } from '../core/store.js';
import { readStepDowns, type LastStepDown } from '../core/hang-backoff.js';
import { shardLock, shardLockPrefix } from './group.js';
import { MAX_MEMBERS, groupPrefix, parseAssignment } from './membership.js';

/** ShardGroupStatus is one reading of a group. */
export interface ShardGroupStatus {
  readonly group: string;
  readonly shards: number;
  readonly members: readonly { identity: string; left: boolean; version: string }[];
  /** The assignment record: each shard's intended owner ('' for none). */
  readonly assigned: readonly string[];
  /** Each shard's lease record (null for a shard never held). */
  readonly records: readonly (LeaseRecord | null)[];
  /** Each shard's last step-down for hung work, as the ledger keeps it (null for none). */
  readonly stepDowns: readonly (LastStepDown | null)[];
}

/** readShardGroup: see the file comment. Throws InvalidConfigError for a group that does not exist. */
export async function readShardGroup(store: LeaseStore, group: string): Promise<ShardGroupStatus> {
  if (!store.ledger) throw new InvalidConfigError(`shards: the ${store.kind} store keeps no ledger`);
  const entry = await store.ledger.get(`${groupPrefix(group)}assignment`);
  const assignment = entry ? parseAssignment(entry.value) : null;
  if (!assignment) throw new InvalidConfigError(`shards: no group "${group}" in this store`);
  const shards = assignment.shards;
  const prefix = `${groupPrefix(group)}members/`;
  const members = (await store.ledger.list(prefix, MAX_MEMBERS)).map((e) => {
    let left = false;
    try {
      left = (JSON.parse(e.value) as { left?: unknown }).left === true;
    } catch {
      left = true;
    }
    return { identity: e.key.slice(prefix.length), left, version: e.version };
  });
  const records = await Promise.all(Array.from({ length: shards }, (_, s) => store.read(shardLock(group, s))));
  const assigned = assignment.owners.map((m) => assignment.members[m] ?? '');
  const known = await readStepDowns(store, { prefix: shardLockPrefix(group), limit: shards });
  const stepDowns = Array.from({ length: shards }, (_, s) => known.get(shardLock(group, s)) ?? null);
  return { group, shards, members, assigned, records, stepDowns };
}
