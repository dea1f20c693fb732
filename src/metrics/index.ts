/**
 * Prometheus metrics for baton electors (see instrument.ts for the list).
 */
export { instrumentElector, RENEW_BUCKETS_SECONDS, type InstrumentOptions, type ElectorInstrumentation } from './instrument.js';
export { OwnLeaseWatch } from './own-lease.js';
export { instrumentShardGroup, type ShardGroupInstrumentation } from './shard-group.js';
