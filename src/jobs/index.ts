/**
 * Singleton jobs: cron on the leader only, run-once per key, task locks, fencing guards.
 * Job state lives in the store's durable ledger (see ledger-keys.ts for the keys).
 */
export { CronJob, cronJob, type CronJobOptions, type CronRunContext, type CronRunner, type CronJobEvents } from './cron.js';
export { readCronHead, HISTORY as CRON_HISTORY, type CronHead, type SlotRecord, type SlotStatus } from './cron-ledger.js';
export { cronStatus, readCronStatuses, formatCronStatus, type CronStatus } from './cron-status.js';
export { Schedule, planSlots, validateMissedPolicy, validateTimeZone, MISSED_POLICIES, type MissedPolicy, type SlotPlan } from './schedule.js';
export {
  runOnce,
  runOnceWith,
  readOnceRecord,
  defaultOnceLock,
  isFinal,
  type RunOnceOptions,
  type OnceResult,
  type OnceRecord,
  type OnceStatus,
  type OnceRunContext,
  type OnceAttempt,
} from './once.js';
export {
  withTaskLock,
  tryTaskLock,
  readTaskLock,
  validateTaskLockOptions,
  killLeadMs,
  type TaskLockOptions,
  type TaskLockHold,
  type TaskLockAttempt,
  type TaskLockResult,
  type TaskLockRecord,
  type TaskLockPhase,
} from './task-lock.js';
export { hostClock, type HostClock } from './host-clock.js';
export {
  ensureFenceSchema,
  withFence,
  fencedQuery,
  isStaleTermError,
  StaleTermError,
  FENCE_SCHEMA_SQL,
  STALE_TERM_SQLSTATE,
  type Fence,
  type Queryable,
  type PoolLike,
} from './fencing.js';
export { functionRunner, type RunOutcome, type RunContext, type Runner, type JobFunction } from './runner.js';
export { validateJobKey, cronLedgerKey, onceLedgerKey, taskLockLedgerKey, LEDGER_PREFIX } from './ledger-keys.js';
