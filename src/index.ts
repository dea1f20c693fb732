/**
 * baton — leader election and singleton work over the coordination stores you already run.
 */
export { LeaderElector } from './core/elector.js';
export type {
  LeaderElectorOptions,
  ElectedEvent,
  StoppedEvent,
  LeaderEvent,
  RenewedEvent,
  StopReason,
  ElectorEvents,
} from './core/elector.js';
export { DEFAULT_TIMING, resolveTiming, validateLockName, validateIdentity, type Timing } from './core/options.js';
export { openStore, parseStoreUrl, defaultStoreUrl, defaultStorePath, redactUrl, registerStore, registeredStores, type ParsedStoreUrl } from './stores/registry.js';
export type { StoreDescriptor, StoreOpenOptions } from './core/store-descriptor.js';
export type {
  LeaseStore,
  LeaseRecord,
  LeaseWrite,
  WriteResult,
  RenewRequest,
  StoreCapabilities,
  WatchListener,
  HolderMetadata,
  Ledger,
  LedgerEntry,
  LedgerPutResult,
  LeaseQueue,
  Presence,
  CampaignOptions,
  CampaignResult,
  RevisionRenewal,
} from './core/store.js';
export { isHeld } from './core/store.js';
export { realClock, sleep, type Clock } from './core/clock.js';
export { requestStepDown, type StepDownOutcome } from './core/step-down.js';
export { requestHandover, type HandoverOutcome, type HandoverOptions } from './core/handover.js';
export {
  listCandidates,
  listCandidateEntries,
  readCandidate,
  compareCandidates,
  compareVersions,
  PresenceTracker,
  PREFER_VALUES,
  PRUNE_AFTER_BEATS,
  type CandidateInfo,
  type CandidateProfile,
  type Prefer,
  type RegistryEntry,
  type RegistrySource,
} from './core/candidates.js';
export type { CandidateOptions } from './core/candidate-side.js';
export { HANG_BACKOFF_MAX_MS, hangBackoffMs, readStepDowns, stepDownLedgerKey, type LastStepDown } from './core/hang-backoff.js';
export { parseDuration, formatDuration } from './core/duration.js';
export { defaultIdentity, BATON_VERSION } from './core/identity.js';
export {
  BatonError,
  InvalidConfigError,
  UsageError,
  StoreUnavailableError,
  LeaseLostError,
  StoreClosedError,
} from './core/errors.js';
export { ExitCode, exitCodeFor } from './cli/exit-codes.js';
export { instrumentElector, type InstrumentOptions, type ElectorInstrumentation } from './metrics/index.js';
export { createLeaderServer, type LeaderServer, type LeaderServerOptions, type LeaderView, type TimelineEntry } from './server/index.js';
export * from './jobs/index.js';
export * from './shards/index.js';
