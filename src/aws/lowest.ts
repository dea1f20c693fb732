/**
 * The `asg-lowest` strategy (seed 001, fixed): the leader is the InService, Healthy member of
 * this instance's Auto Scaling group with the lowest instance id. Every member computes the
 * same answer from the same API state, with no coordination and no store.
 *
 * What it fixes: the group comes from the Auto Scaling API (not from every tag in the account),
 * lists are paged, Pending / Terminating / Standby / Unhealthy members never count.
 *
 * What it cannot fix: there is no fencing token and no lease. While the group changes, two
 * members can read different states and both believe they lead (a new lower id just went
 * InService for one reader but not yet for the other), and a leader that dies is still chosen
 * until Auto Scaling notices. Use it for idempotent, tolerant work; use a lease store
 * (`baton run`) when two leaders at once would do harm.
 */
import type { AwsApi, GroupInstance } from './api.js';
import { connectAws } from './api.js';
import { electionCandidates, isCandidate } from './candidates.js';
import { AwsRequestError } from './errors.js';
import { InstanceMetadata, resolveRegion } from './imds.js';

/** LowestResult is what `asg-lowest` saw and decided. */
export interface LowestResult {
  readonly strategy: 'asg-lowest';
  readonly instanceId: string;
  readonly region: string;
  readonly group: string;
  /** Candidate ids (InService and Healthy), sorted; the first is the leader. */
  readonly candidates: string[];
  /** Members that are not candidates, with the reason in their states. */
  readonly excluded: { instanceId: string; lifecycleState: string; healthStatus: string }[];
  readonly leader: string | null;
  readonly isLeader: boolean;
}

/** CheckOptions: where to read metadata and how to reach AWS (all optional). */
export interface CheckOptions {
  imds?: InstanceMetadata;
  /** AwsApi to use; default: the SDK-backed one for this instance's region. */
  api?: AwsApi;
  env?: NodeJS.ProcessEnv;
}

/**
 * checkLowest finds this instance's group and tells whether this instance is its lowest-id
 * candidate. Throws AwsUnavailableError (69) when AWS or metadata cannot be reached and
 * AwsRequestError (78) when the instance is in no group.
 */
export async function checkLowest(options: CheckOptions = {}): Promise<LowestResult> {
  const imds = options.imds ?? new InstanceMetadata({ env: options.env });
  const instanceId = await imds.instanceId();
  const region = await resolveRegion(imds, options.env);
  const api = options.api ?? connectAws({ region });
  try {
    const own = await api.findGroupOf(instanceId);
    if (!own) throw new AwsRequestError(`aws: instance ${instanceId} is not in an Auto Scaling group`, 'NotInGroup');
    const members: GroupInstance[] = (await api.groupInstances(own.group)) ?? [];
    const candidates = electionCandidates(members);
    const leader = candidates[0] ?? null;
    return {
      strategy: 'asg-lowest',
      instanceId,
      region,
      group: own.group,
      candidates,
      excluded: members.filter((m) => !isCandidate(m)).map((m) => ({ ...m })),
      leader,
      isLeader: leader === instanceId,
    };
  } finally {
    if (!options.api) api.close();
  }
}
