/**
 * AwsApi is the handful of Auto Scaling and EC2 calls baton makes, with paging, batching and
 * error translation done once here. Every list call follows NextToken to the end (AWS may return
 * fewer items than asked for, so an empty token — not a short page — ends the list).
 *
 * Calls and the IAM actions they need:
 *   findGroupOf            autoscaling:DescribeAutoScalingInstances
 *   groupInstances         autoscaling:DescribeAutoScalingGroups
 *   groupsTagged           autoscaling:DescribeAutoScalingGroups
 *   tagsWithKey            ec2:DescribeTags
 *   addTag / removeTag     ec2:CreateTags / ec2:DeleteTags
 *   completeLifecycleAction autoscaling:CompleteLifecycleAction
 */
import type { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import type { EC2Client } from '@aws-sdk/client-ec2';
import { AwsUnavailableError, awsCall } from './errors.js';
import { makeAutoScalingClient, makeEc2Client, type AutoScalingSdk, type Ec2Sdk, type SdkOptions } from './sdk.js';

/** GroupInstance is one member of an Auto Scaling group as the group lists it. */
export interface GroupInstance {
  readonly instanceId: string;
  /** Pending, InService, Standby, Terminating:Wait, Detaching, … */
  readonly lifecycleState: string;
  /** Healthy or Unhealthy (compared case-insensitively: one AWS call says HEALTHY). */
  readonly healthStatus: string;
}

/** GroupOf is an instance's group and its own state there. */
export interface GroupOf {
  readonly group: string;
  readonly lifecycleState: string;
  readonly healthStatus: string;
}

/** TagRow is one instance tag. */
export interface TagRow {
  readonly instanceId: string;
  readonly key: string;
  readonly value: string;
}

/** AwsApi is what the AWS helpers need from AWS; `connectAws` gives the SDK-backed one. */
export interface AwsApi {
  /** The group `instanceId` belongs to, or null if it is in none. */
  findGroupOf(instanceId: string): Promise<GroupOf | null>;
  /** Every member of `group` in any lifecycle state, or null if the group does not exist. */
  groupInstances(group: string): Promise<GroupInstance[] | null>;
  /** Names of the groups carrying a tag with this key. */
  groupsTagged(key: string): Promise<string[]>;
  /** Instance tags with this key (optionally only on these instances). */
  tagsWithKey(key: string, instanceIds?: readonly string[]): Promise<TagRow[]>;
  /** Sets tag key=value on the instances. */
  addTag(instanceIds: readonly string[], key: string, value: string): Promise<void>;
  /** Removes tag `key` (any value) from the instances. */
  removeTag(instanceIds: readonly string[], key: string): Promise<void>;
  /** Completes a lifecycle action (CONTINUE lets a termination go ahead). */
  completeLifecycleAction(a: { group: string; hook: string; instanceId: string; result?: 'CONTINUE' | 'ABANDON' }): Promise<void>;
  /** Releases the SDK clients' sockets. */
  close(): void;
}

// CreateTags/DeleteTags take up to 1000 ids; AWS recommends smaller batches. Filter values: 200.
const TAG_BATCH = 100;
const FILTER_BATCH = 100;
const MAX_PAGES = 100_000;

/** connectAws returns the SDK-backed AwsApi; each SDK is loaded on first use. */
export function connectAws(options: SdkOptions): AwsApi {
  return new SdkAwsApi(options);
}

class SdkAwsApi implements AwsApi {
  private as?: Promise<{ sdk: AutoScalingSdk; client: AutoScalingClient }>;
  private ec2?: Promise<{ sdk: Ec2Sdk; client: EC2Client }>;

  constructor(private readonly options: SdkOptions) {}

  private autoScaling() {
    return (this.as ??= makeAutoScalingClient(this.options));
  }

  private ec2Client() {
    return (this.ec2 ??= makeEc2Client(this.options));
  }

  async findGroupOf(instanceId: string): Promise<GroupOf | null> {
    const { sdk, client } = await this.autoScaling();
    const rows = await paginate(`DescribeAutoScalingInstances for instance ${instanceId}`, async (NextToken) => {
      const out = await client.send(new sdk.DescribeAutoScalingInstancesCommand({ InstanceIds: [instanceId], MaxRecords: 50, NextToken }));
      return { items: out.AutoScalingInstances ?? [], next: out.NextToken };
    });
    const row = rows.find((r) => r.InstanceId === instanceId && r.AutoScalingGroupName);
    return row ? { group: row.AutoScalingGroupName!, lifecycleState: row.LifecycleState ?? '', healthStatus: row.HealthStatus ?? '' } : null;
  }

  async groupInstances(group: string): Promise<GroupInstance[] | null> {
    const { sdk, client } = await this.autoScaling();
    // A group's members come back whole inside its record; the call itself still pages (by group).
    const groups = await paginate(`DescribeAutoScalingGroups for group "${group}"`, async (NextToken) => {
      const out = await client.send(new sdk.DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [group], MaxRecords: 100, NextToken }));
      return { items: out.AutoScalingGroups ?? [], next: out.NextToken };
    });
    const g = groups.find((x) => x.AutoScalingGroupName === group);
    if (!g) return null;
    return (g.Instances ?? [])
      .filter((i) => i.InstanceId)
      .map((i) => ({ instanceId: i.InstanceId!, lifecycleState: i.LifecycleState ?? '', healthStatus: i.HealthStatus ?? '' }));
  }

  async groupsTagged(key: string): Promise<string[]> {
    const { sdk, client } = await this.autoScaling();
    const groups = await paginate(`DescribeAutoScalingGroups for groups tagged ${key}`, async (NextToken) => {
      const out = await client.send(
        new sdk.DescribeAutoScalingGroupsCommand({ Filters: [{ Name: 'tag-key', Values: [key] }], MaxRecords: 100, NextToken }),
      );
      return { items: out.AutoScalingGroups ?? [], next: out.NextToken };
    });
    return groups.map((g) => g.AutoScalingGroupName!).filter(Boolean);
  }

  async tagsWithKey(key: string, instanceIds?: readonly string[]): Promise<TagRow[]> {
    const { sdk, client } = await this.ec2Client();
    const batches = instanceIds ? chunks(instanceIds, FILTER_BATCH) : [undefined];
    const rows: TagRow[] = [];
    for (const ids of batches) {
      const Filters = [{ Name: 'key', Values: [key] }, { Name: 'resource-type', Values: ['instance'] }];
      if (ids) Filters.push({ Name: 'resource-id', Values: [...ids] });
      const page = await paginate(`DescribeTags for ${key}${ids ? ` on ${instancesNamed(ids)}` : ''}`, async (NextToken) => {
        const out = await client.send(new sdk.DescribeTagsCommand({ Filters, MaxResults: 1000, NextToken }));
        return { items: out.Tags ?? [], next: out.NextToken };
      });
      for (const t of page) {
        if (t.ResourceId && t.Key === key) rows.push({ instanceId: t.ResourceId, key: t.Key, value: t.Value ?? '' });
      }
    }
    return rows;
  }

  async addTag(instanceIds: readonly string[], key: string, value: string): Promise<void> {
    const { sdk, client } = await this.ec2Client();
    for (const ids of chunks(instanceIds, TAG_BATCH)) {
      await awsCall(`CreateTags ${key} on ${instancesNamed(ids)}`, () => client.send(new sdk.CreateTagsCommand({ Resources: ids, Tags: [{ Key: key, Value: value }] })));
    }
  }

  async removeTag(instanceIds: readonly string[], key: string): Promise<void> {
    const { sdk, client } = await this.ec2Client();
    for (const ids of chunks(instanceIds, TAG_BATCH)) {
      await awsCall(`DeleteTags ${key} on ${instancesNamed(ids)}`, () => client.send(new sdk.DeleteTagsCommand({ Resources: ids, Tags: [{ Key: key }] })));
    }
  }

  async completeLifecycleAction(a: { group: string; hook: string; instanceId: string; result?: 'CONTINUE' | 'ABANDON' }): Promise<void> {
    const { sdk, client } = await this.autoScaling();
    await awsCall(`CompleteLifecycleAction for ${a.instanceId} (group "${a.group}", hook "${a.hook}")`, () =>
      client.send(
        new sdk.CompleteLifecycleActionCommand({
          AutoScalingGroupName: a.group,
          LifecycleHookName: a.hook,
          InstanceId: a.instanceId,
          LifecycleActionResult: a.result ?? 'CONTINUE',
        }),
      ),
    );
  }

  close(): void {
    void this.as?.then((x) => x.client.destroy(), () => {});
    void this.ec2?.then((x) => x.client.destroy(), () => {});
  }
}

/**
 * paginate calls `page` with each NextToken until none comes back, translating errors. A token
 * that repeats would loop forever, so it is treated as AWS misbehaving.
 */
export async function paginate<T>(operation: string, page: (next: string | undefined) => Promise<{ items: T[]; next?: string }>): Promise<T[]> {
  const all: T[] = [];
  const seen = new Set<string>();
  let next: string | undefined;
  for (let n = 0; n < MAX_PAGES; n++) {
    const out = await awsCall(operation, () => page(next));
    all.push(...out.items);
    if (!out.next) return all;
    if (seen.has(out.next)) throw new AwsUnavailableError(`aws: ${operation}: the same NextToken came back twice`);
    seen.add(out.next);
    next = out.next;
  }
  throw new AwsUnavailableError(`aws: ${operation}: more than ${MAX_PAGES} pages`);
}

/** instancesNamed names the instances of a call in an error line: the first three and how many more. */
function instancesNamed(ids: readonly string[]): string {
  const more = ids.length > 3 ? ` and ${ids.length - 3} more` : '';
  return `${ids.length === 1 ? 'instance' : 'instances'} ${ids.slice(0, 3).join(', ')}${more}`;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
