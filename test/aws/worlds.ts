/**
 * The AWS the shared scenarios run against (test/aws/scenarios.ts), behind one small interface:
 *
 * - `FakeWorld`: the project's own fake (test/harness/aws-fake.ts). It is the only one that can
 *   throttle, deny, hold or slow a call, serve instance metadata, page every list and put an
 *   instance in Pending or Terminating:Wait, so the tests of those stay on it.
 * - `MotoWorld`: moto in server mode (infra/servers/moto.ts), written independently of baton.
 *   State is changed only through the AWS API itself (Auto Scaling and EC2 calls), as an operator
 *   or Auto Scaling would change it; moto picks the instance ids.
 *
 * baton's code and the AWS SDK reach either through the standard endpoint variables only.
 */
import { randomBytes } from 'node:crypto';
import { after } from 'node:test';
import { AutoScaling } from '@aws-sdk/client-auto-scaling';
import { EC2 } from '@aws-sdk/client-ec2';
import { AwsFake } from '../harness/aws-fake.js';
import { MotoServer } from '../../infra/servers/index.js';

/** AwsWorld is an AWS account with Auto Scaling groups that a scenario can change. */
export interface AwsWorld {
  readonly name: 'fake' | 'moto';
  readonly region: string;
  /** apiEnv is the environment of a process off any instance: endpoints, region, dummy credentials, no metadata. */
  apiEnv(): Promise<NodeJS.ProcessEnv>;
  createGroup(name: string): Promise<void>;
  /** launch adds `count` InService instances to `group` and returns their ids, sorted. */
  launch(group: string, count: number): Promise<string[]>;
  /** terminate terminates an instance through its group (it leaves the group and keeps its tags). */
  terminate(id: string): Promise<void>;
  /** deleteGroup force-deletes a group: its instances are terminated. */
  deleteGroup(name: string): Promise<void>;
  /** standby puts an InService member in Standby. */
  standby(group: string, id: string): Promise<void>;
  /** unhealthy marks a member Unhealthy (SetInstanceHealth). */
  unhealthy(id: string): Promise<void>;
  setTag(id: string, key: string, value: string): Promise<void>;
  /** tagged lists the instances (terminated ones too) carrying `key`, with `value` if given, sorted. */
  tagged(key: string, value?: string): Promise<string[]>;
  /** inService lists a group's InService instances, sorted. */
  inService(group: string): Promise<string[]>;
}

/** FakeWorld is AwsWorld over AwsFake; `fake` is there for the fake-only knobs. */
export class FakeWorld implements AwsWorld {
  readonly name = 'fake';
  constructor(readonly fake: AwsFake) {}
  /** start starts a fake for this test file and stops it after the file. */
  static async start(): Promise<FakeWorld> {
    const fake = await AwsFake.start();
    after(() => fake.stop());
    return new FakeWorld(fake);
  }
  get region(): string {
    return this.fake.region;
  }
  async apiEnv(): Promise<NodeJS.ProcessEnv> {
    return { ...(await this.fake.env()), AWS_REGION: this.region };
  }
  async createGroup(name: string): Promise<void> {
    this.fake.createGroup(name);
  }
  async launch(group: string, count: number): Promise<string[]> {
    // Random ids, as AWS and moto give: a newcomer may sort below the current members.
    const ids = Array.from({ length: count }, () => `i-${randomBytes(9).toString('hex').slice(0, 17)}`);
    return this.fake.launch(group, count, { ids }).sort();
  }
  async terminate(id: string): Promise<void> {
    this.fake.terminate(id);
  }
  async deleteGroup(name: string): Promise<void> {
    for (const id of this.fake.members(name)) this.fake.terminate(id);
    this.fake.groups.delete(name);
  }
  async standby(_group: string, id: string): Promise<void> {
    this.fake.instance(id).lifecycle = 'Standby';
  }
  async unhealthy(id: string): Promise<void> {
    this.fake.instance(id).healthy = false;
  }
  async setTag(id: string, key: string, value: string): Promise<void> {
    this.fake.instance(id).tags.set(key, value);
  }
  async tagged(key: string, value?: string): Promise<string[]> {
    return this.fake.tagged(key, value);
  }
  async inService(group: string): Promise<string[]> {
    return this.fake.members(group).filter((id) => this.fake.instance(id).lifecycle === 'InService');
  }
}

/** MotoWorld is AwsWorld over a moto server, changed through the Auto Scaling and EC2 APIs. */
export class MotoWorld implements AwsWorld {
  readonly name = 'moto';
  readonly region = 'eu-west-3';
  private readonly autoscaling: AutoScaling;
  private readonly ec2: EC2;
  private template = '';

  private constructor(readonly server: MotoServer) {
    const config = { region: this.region, endpoint: server.endpoint, credentials: { accessKeyId: 'AKIDMOTO', secretAccessKey: 'moto' } };
    this.autoscaling = new AutoScaling(config);
    this.ec2 = new EC2(config);
  }

  /** start starts a moto server for this test file (stopped after it) and makes a launch template. */
  static async start(): Promise<MotoWorld> {
    const server = await new MotoServer().start();
    const world = new MotoWorld(server);
    after(async () => {
      world.autoscaling.destroy();
      world.ec2.destroy();
      await server.stop();
    });
    const image = (await world.ec2.describeImages({})).Images?.[0]?.ImageId;
    if (!image) throw new Error('moto lists no machine image');
    world.template = 'baton-test';
    await world.ec2.createLaunchTemplate({ LaunchTemplateName: world.template, LaunchTemplateData: { ImageId: image, InstanceType: 't3.micro' } });
    return world;
  }

  async apiEnv(): Promise<NodeJS.ProcessEnv> {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('AWS_') && !k.startsWith('BATON_')) env[k] = v;
    return {
      ...env,
      AWS_ENDPOINT_URL_AUTO_SCALING: this.server.endpoint,
      AWS_ENDPOINT_URL_EC2: this.server.endpoint,
      AWS_EC2_METADATA_SERVICE_ENDPOINT: await AwsFake.closedEndpoint(),
      AWS_ACCESS_KEY_ID: 'AKIDMOTO',
      AWS_SECRET_ACCESS_KEY: 'moto',
      AWS_CONFIG_FILE: '/nonexistent/aws-config',
      AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/aws-credentials',
      AWS_REGION: this.region,
    };
  }
  async createGroup(name: string): Promise<void> {
    await this.autoscaling.createAutoScalingGroup({
      AutoScalingGroupName: name, MinSize: 0, MaxSize: 5000, DesiredCapacity: 0,
      LaunchTemplate: { LaunchTemplateName: this.template }, AvailabilityZones: [`${this.region}a`],
    });
  }
  private async group(name: string) {
    const g = (await this.autoscaling.describeAutoScalingGroups({ AutoScalingGroupNames: [name] })).AutoScalingGroups?.[0];
    if (!g) throw new Error(`moto: no group ${name}`);
    return g;
  }
  async launch(group: string, count: number): Promise<string[]> {
    const before = await this.group(group);
    const known = new Set((before.Instances ?? []).map((i) => i.InstanceId));
    await this.autoscaling.setDesiredCapacity({ AutoScalingGroupName: group, DesiredCapacity: (before.DesiredCapacity ?? 0) + count });
    const ids = ((await this.group(group)).Instances ?? []).map((i) => i.InstanceId!).filter((id) => !known.has(id));
    if (ids.length !== count) throw new Error(`moto launched ${ids.length} instances into ${group}, not ${count}`);
    return ids.sort();
  }
  async terminate(id: string): Promise<void> {
    await this.autoscaling.terminateInstanceInAutoScalingGroup({ InstanceId: id, ShouldDecrementDesiredCapacity: true });
  }
  async deleteGroup(name: string): Promise<void> {
    const ids = ((await this.group(name)).Instances ?? []).map((i) => i.InstanceId!);
    await this.autoscaling.deleteAutoScalingGroup({ AutoScalingGroupName: name, ForceDelete: true });
    // ForceDelete's own terminations, made explicit so the instances are gone whatever moto does.
    if (ids.length > 0) await this.ec2.terminateInstances({ InstanceIds: ids });
  }
  async standby(group: string, id: string): Promise<void> {
    await this.autoscaling.enterStandby({ AutoScalingGroupName: group, InstanceIds: [id], ShouldDecrementDesiredCapacity: true });
  }
  async unhealthy(id: string): Promise<void> {
    await this.autoscaling.setInstanceHealth({ InstanceId: id, HealthStatus: 'Unhealthy' });
  }
  async setTag(id: string, key: string, value: string): Promise<void> {
    await this.ec2.createTags({ Resources: [id], Tags: [{ Key: key, Value: value }] });
  }
  async tagged(key: string, value?: string): Promise<string[]> {
    const filters = [{ Name: 'key', Values: [key] }, { Name: 'resource-type', Values: ['instance'] }];
    const ids: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.ec2.describeTags({ Filters: filters, NextToken: token });
      for (const t of page.Tags ?? []) if (t.Key === key && (value === undefined || t.Value === value)) ids.push(t.ResourceId!);
      token = page.NextToken;
    } while (token);
    return ids.sort();
  }
  async inService(group: string): Promise<string[]> {
    return ((await this.group(group)).Instances ?? []).filter((i) => i.LifecycleState === 'InService').map((i) => i.InstanceId!).sort();
  }
}

/** useInProcess points this process's AWS SDK clients at `world` (no instance metadata). */
export async function useInProcess(world: AwsWorld): Promise<void> {
  for (const k of Object.keys(process.env)) if (k.startsWith('AWS_') || k.startsWith('BATON_')) delete process.env[k];
  Object.assign(process.env, await world.apiEnv(), { AWS_REGION: world.region, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' });
}
