/** Sharded leadership: N shards over the live members of a group (see group.ts). */
export { ShardGroup, shardLock, type ShardGroupOptions, type ShardGiveUp, type ShardAcquiredEvent, type ShardReleasedEvent, type ShardRenewedEvent, type ShardGroupEvents } from './group.js';
export { assignShards, nextAssignment, movedShards, ownerNames, type ShardAssignment, type ShardExclusions } from './assignment.js';
export { groupPrefix, type MemberView } from './membership.js';
export { readShardGroup, type ShardGroupStatus } from './status.js';
