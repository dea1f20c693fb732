/**
 * reconcileHandler: the AWS Lambda entry point of the leader-tag reconciler. It accepts
 *
 * - Auto Scaling notifications delivered through SNS (`Records[].Sns.Message`, a JSON document
 *   with `Event` = autoscaling:EC2_INSTANCE_LAUNCH | _TERMINATE | _LAUNCH_ERROR |
 *   _TERMINATE_ERROR | TEST_NOTIFICATION and `AutoScalingGroupName`): that group is reconciled;
 * - Auto Scaling events through EventBridge (`detail.AutoScalingGroupName`): likewise;
 * - a scheduled EventBridge event, or any other invocation (the safety net): every group named
 *   in BATON_GROUPS (comma-separated), else every group carrying the tag key BATON_GROUP_TAG
 *   (default `baton:leader-election`) is reconciled.
 *
 * Environment: BATON_LEADER_TAG (default app:isLeader), BATON_GROUPS, BATON_GROUP_TAG,
 * AWS_REGION (set by Lambda). The event only says *which* group to look at; what to do comes
 * from the group's state (reconcile.ts), so duplicate, late or lost notifications are harmless.
 * If any group fails the handler throws after trying all of them, so Lambda retries the event.
 */
import { connectAws, type AwsApi } from './api.js';
import { errorMessage, InvalidConfigError } from '../core/errors.js';
import { leaderTagKey } from './leader-tag.js';
import { reconcileGroup, type ReconcileResult } from './reconcile.js';

/** DEFAULT_GROUP_TAG marks groups the scheduled sweep reconciles when BATON_GROUPS is unset. */
export const DEFAULT_GROUP_TAG = 'baton:leader-election';

/** HandlerOptions let tests and embedders pass their own AwsApi, environment and logger. */
export interface HandlerOptions {
  api?: AwsApi;
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

/** HandlerResult lists what each group ended with. */
export interface HandlerResult {
  readonly trigger: 'notification' | 'sweep';
  readonly groups: ReconcileResult[];
}

/** reconcileHandler is the Lambda handler (configure the function's handler to point here). */
export async function reconcileHandler(event: unknown): Promise<HandlerResult> {
  return makeReconcileHandler()(event);
}

/** makeReconcileHandler builds a handler bound to `options`. */
export function makeReconcileHandler(options: HandlerOptions = {}): (event: unknown) => Promise<HandlerResult> {
  return async (event: unknown) => {
    const env = options.env ?? process.env;
    const log = options.log ?? ((line: string) => console.log(line));
    const tag = leaderTagKey(undefined, env);
    const notified = groupsInEvent(event);
    const api = options.api ?? connectAws({ region: requireRegion(env) });
    try {
      const listed = notified.length > 0 ? [] : listedGroups(env);
      const groups = notified.length > 0 ? notified : listed.length > 0 ? listed : await api.groupsTagged(env.BATON_GROUP_TAG?.trim() || DEFAULT_GROUP_TAG);
      const results: ReconcileResult[] = [];
      const failures: string[] = [];
      await forEachLimited(groups, 4, async (group) => {
        try {
          const r = await reconcileGroup(api, group, { tag, log: (line) => log(line) });
          results.push(r);
          log(JSON.stringify({ msg: 'reconciled', ...r }));
          // A name in BATON_GROUPS that matches no group is a typo to surface (the invocation
          // fails). A notification for a group deleted since is not: there is nothing to fix.
          if (!r.exists && listed.includes(group)) failures.push(`${group}: no Auto Scaling group of that name (BATON_GROUPS)`);
        } catch (err) {
          failures.push(`${group}: ${errorMessage(err)}`);
          log(JSON.stringify({ msg: 'reconcile failed', group, error: errorMessage(err) }));
        }
      });
      if (failures.length > 0) throw new Error(`baton reconcile failed for ${failures.length} group(s): ${failures.join('; ')}`);
      return { trigger: notified.length > 0 ? 'notification' : 'sweep', groups: results.sort((a, b) => (a.group < b.group ? -1 : 1)) };
    } finally {
      if (!options.api) api.close();
    }
  };
}

/** groupsInEvent returns the group names an SNS or EventBridge Auto Scaling event names. */
export function groupsInEvent(event: unknown): string[] {
  const names = new Set<string>();
  const e = (event ?? {}) as { Records?: unknown[]; detail?: { AutoScalingGroupName?: unknown } };
  for (const record of Array.isArray(e.Records) ? e.Records : []) {
    const message = (record as { Sns?: { Message?: unknown } })?.Sns?.Message;
    if (typeof message !== 'string') continue;
    try {
      const m = JSON.parse(message) as { AutoScalingGroupName?: unknown };
      if (isGroupName(m.AutoScalingGroupName)) names.add(m.AutoScalingGroupName);
    } catch {
      // Not an Auto Scaling notification; the sweep (if nothing else is named) covers it.
    }
  }
  if (isGroupName(e.detail?.AutoScalingGroupName)) names.add(e.detail.AutoScalingGroupName);
  return [...names];
}

function listedGroups(env: NodeJS.ProcessEnv): string[] {
  return [...new Set((env.BATON_GROUPS ?? '').split(',').map((s) => s.trim()).filter(Boolean))];
}

function isGroupName(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= 255;
}

function requireRegion(env: NodeJS.ProcessEnv): string {
  const region = env.AWS_REGION?.trim() || env.AWS_DEFAULT_REGION?.trim();
  if (!region) throw new InvalidConfigError('aws: AWS_REGION is not set');
  return region;
}

async function forEachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
