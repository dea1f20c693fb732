/**
 * Who may lead in an Auto Scaling group. Only members whose lifecycle state is exactly
 * `InService` and whose health status is Healthy are candidates:
 *
 * - Pending / Pending:Wait / Pending:Proceed: still booting or held by a launch hook; not ready.
 * - Terminating / Terminating:Wait / Terminating:Proceed: leaving — seed 001 counted these.
 * - Standby / EnteringStandby: taken out of service by an operator on purpose.
 * - Detaching / Detached: leaving the group.
 * - Warmed:* : warm-pool instances are not members at all (the group does not list them).
 * - InService but Unhealthy: Auto Scaling is about to replace it; electing it only adds a
 *   hand-over. (If every InService member is Unhealthy there is no leader until one recovers
 *   or is replaced: a leader the group is about to kill is worse than a short gap.)
 *
 * Order is plain code-unit order of instance ids: the same on every host and Node version,
 * unlike localeCompare.
 */
import type { GroupInstance } from './api.js';

/** isCandidate tells whether a member may lead (InService and Healthy). */
export function isCandidate(i: GroupInstance): boolean {
  return i.lifecycleState === 'InService' && i.healthStatus.toLowerCase() === 'healthy';
}

/**
 * tagCounts tells whether a leader tag on this member can still make it act as leader: its
 * lifecycle state is InService or Pending* (instance metadata's target lifecycle state, what
 * `is-leader --strategy asg-tag` reads, is then `InService`). A tag anywhere else is void — on
 * a terminated or detached instance, a member leaving (Terminating*, Detaching) or out of
 * service (Standby, EnteringStandby) — and must never stand in the way of a new leader.
 */
export function tagCounts(member: GroupInstance | undefined): boolean {
  return member !== undefined && (member.lifecycleState === 'InService' || member.lifecycleState.startsWith('Pending'));
}

/** compareIds orders instance ids by code units (deterministic everywhere). */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** electionCandidates returns the candidate ids of a group's members, sorted. */
export function electionCandidates(members: readonly GroupInstance[]): string[] {
  return [...new Set(members.filter(isCandidate).map((i) => i.instanceId))].sort(compareIds);
}
