/**
 * baton-election/node-cron: a RunCoordinator for node-cron 4's `distributed` tasks, so each fire
 * runs once fleet-wide under a fenced term and is recorded in baton's cron ledger.
 */
export { runCoordinator, NodeCronCoordinator, type RunCoordinator, type NodeCronCoordinatorOptions, type MissedFirePolicy, type FireClaim } from './coordinator.js';
