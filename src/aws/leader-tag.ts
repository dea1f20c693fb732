/**
 * The `asg-tag` strategy (seed 000, fixed): the leader is the instance carrying the leader tag
 * that the reconciler (reconcile.ts, run as a Lambda) keeps on exactly one InService member of
 * each group. The tag's value is the group's name, for people and for scoping; its presence is
 * what counts, as in the original design.
 *
 * An instance reads its own tag from instance metadata (`/latest/meta-data/tags/instance/KEY`,
 * free, no IAM). When metadata tags are off for the instance, that whole folder answers 404; then
 * it asks EC2 DescribeTags (needs ec2:DescribeTags). Metadata tags exist only for keys made of
 * letters, digits and + - = . , _ : @ (EC2 refuses other keys once metadata tags are on), so any
 * other key goes straight to DescribeTags.
 *
 * A tag counts only while this instance's target lifecycle state (metadata
 * `autoscaling/target-lifecycle-state`, free, no IAM) is `InService`. A leader on its way out —
 * Terminating:Wait (target `Terminated`), Standby, Detached — may keep its tag for a while, for
 * example when EC2 refuses to remove it; it must not act as leader while the reconciler has
 * already tagged its successor. An instance in no group (the path answers 404) is a
 * configuration error (78), as for `asg-lowest`: a script can tell "not set up" from "not the
 * leader" (1).
 */
import { connectAws, type AwsApi } from './api.js';
import { InvalidConfigError } from '../core/errors.js';
import { AwsRequestError } from './errors.js';
import { InstanceMetadata, resolveRegion } from './imds.js';

/** DEFAULT_LEADER_TAG is the tag key of seed 000: `app:isLeader`. */
export const DEFAULT_LEADER_TAG = 'app:isLeader';

/** leaderTagKey is `explicit`, else BATON_LEADER_TAG, else DEFAULT_LEADER_TAG; validated. */
export function leaderTagKey(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  const key = (explicit ?? env.BATON_LEADER_TAG ?? DEFAULT_LEADER_TAG).trim();
  if (key === '' || key.length > 128) throw new InvalidConfigError(`aws: leader tag key must be 1–128 characters, got "${key}"`);
  if (key.toLowerCase().startsWith('aws:')) throw new InvalidConfigError(`aws: leader tag key "${key}" uses the reserved aws: prefix`);
  return key;
}

/** TagResult is what `asg-tag` saw. */
export interface TagResult {
  readonly strategy: 'asg-tag';
  readonly instanceId: string;
  readonly tag: string;
  /** The tag's value (the group name), or null when this instance does not carry it. */
  readonly value: string | null;
  /** Where the answer came from. */
  readonly source: 'instance-metadata' | 'DescribeTags';
  /** The instance's target lifecycle state; the tag counts only when it is `InService`. */
  readonly lifecycleState: string;
  readonly isLeader: boolean;
}

/**
 * checkLeaderTag tells whether this instance carries the leader tag while InService. Throws
 * AwsUnavailableError (69) when metadata or EC2 cannot be reached, AwsRequestError (78) when the
 * instance is in no Auto Scaling group.
 */
export async function checkLeaderTag(options: { tag?: string; imds?: InstanceMetadata; api?: AwsApi; env?: NodeJS.ProcessEnv } = {}): Promise<TagResult> {
  const tag = leaderTagKey(options.tag, options.env);
  const imds = options.imds ?? new InstanceMetadata({ env: options.env });
  const instanceId = await imds.instanceId();
  const target = (await imds.get('autoscaling/target-lifecycle-state'))?.trim();
  if (target === undefined) throw new AwsRequestError(`aws: instance ${instanceId} is not in an Auto Scaling group`, 'NotInGroup');
  const result = (value: string | null, source: TagResult['source']): TagResult => ({
    strategy: 'asg-tag',
    instanceId,
    tag,
    value,
    source,
    lifecycleState: target,
    isLeader: value !== null && target === 'InService',
  });
  if (METADATA_KEY.test(tag) && tag !== '.' && tag !== '..' && tag !== '_index') {
    const value = await imds.get(`tags/instance/${tag}`);
    if (value !== null) return result(value, 'instance-metadata');
    // 404 means either "no such tag" or "metadata tags are off": the folder itself tells which.
    if ((await imds.get('tags/instance')) !== null) return result(null, 'instance-metadata');
  }
  const api = options.api ?? connectAws({ region: await resolveRegion(imds, options.env) });
  try {
    const rows = await api.tagsWithKey(tag, [instanceId]);
    const row = rows.find((r) => r.instanceId === instanceId);
    return result(row ? row.value : null, 'DescribeTags');
  } finally {
    if (!options.api) api.close();
  }
}

// The characters EC2 allows in tag keys when tags are in instance metadata; all are path-safe.
const METADATA_KEY = /^[A-Za-z0-9+=.,_:@-]+$/;
