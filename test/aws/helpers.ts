/**
 * Helpers for the AWS tests: point this process (or a spawned CLI) at the AwsFake, run the CLI,
 * and build the events Lambda receives. The fake is the only stand-in: baton's own code runs
 * unchanged and talks to it through the AWS SDK's standard endpoint settings.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { AwsFake } from '../harness/aws-fake.js';
import { FakeWorld, useInProcess } from './worlds.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BATON = join(ROOT, 'bin', 'baton.js');

/** useFakeInProcess points this process's AWS SDK clients at the fake (no instance metadata). */
export function useFakeInProcess(fake: AwsFake): Promise<void> {
  return useInProcess(new FakeWorld(fake));
}

/** CliRun is a finished CLI process. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** BatonChild is a running CLI process with its output collected. */
export class BatonChild {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly done: Promise<CliRun>;

  constructor(args: string[], env: NodeJS.ProcessEnv, nodeArgs: string[] = []) {
    this.child = spawn(process.execPath, [...nodeArgs, BATON, ...args], { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d) => (this.stdout += d));
    this.child.stderr!.on('data', (d) => (this.stderr += d));
    this.done = new Promise((resolve) => this.child.on('close', (code) => resolve({ code, stdout: this.stdout, stderr: this.stderr })));
  }

  /** kill stops the process (SIGKILL) if it still runs, and waits for it. */
  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.done;
  }
}

/** runBaton runs the CLI to completion (killing it after `timeoutMs`). */
export async function runBaton(args: string[], env: NodeJS.ProcessEnv, options: { timeoutMs?: number; nodeArgs?: string[] } = {}): Promise<CliRun> {
  const p = new BatonChild(args, env, options.nodeArgs);
  const timeoutMs = options.timeoutMs ?? 60_000;
  const timer = setTimeout(() => p.child.kill('SIGKILL'), timeoutMs);
  try {
    return await p.done;
  } finally {
    clearTimeout(timer);
  }
}

/** waitFor polls `check` until it returns true (generous bound; fails with `what`). */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * snsEvent is the Lambda event SNS delivers for one Auto Scaling notification, with the message
 * body Auto Scaling sends for `event`: a launch or terminate activity (…_ERROR alike), or the
 * short body of the TEST_NOTIFICATION sent when notifications are configured.
 */
export function snsEvent(group: string, event = 'autoscaling:EC2_INSTANCE_LAUNCH', instanceId = 'i-0000000000000000f'): unknown {
  const groupArn = `arn:aws:autoscaling:eu-west-3:123456789012:autoScalingGroup:0:autoScalingGroupName/${group}`;
  const launching = event.startsWith('autoscaling:EC2_INSTANCE_LAUNCH');
  const message = event === 'autoscaling:TEST_NOTIFICATION'
    ? { AccountId: '123456789012', RequestId: '5e0b2f0b-0000-0000-0000-000000000001', AutoScalingGroupARN: groupArn, AutoScalingGroupName: group, Service: 'AWS Auto Scaling', Event: event, Time: '2024-06-01T09:59:00.000Z' }
    : {
        Origin: launching ? 'EC2' : 'AutoScalingGroup',
        Destination: launching ? 'AutoScalingGroup' : 'EC2',
        Progress: 50,
        AccountId: '123456789012',
        Description: `${launching ? 'Launching a new' : 'Terminating'} EC2 instance: ${instanceId}`,
        RequestId: '5e0b2f0b-0000-0000-0000-000000000000',
        EndTime: '2024-06-01T10:00:05.000Z',
        AutoScalingGroupARN: groupArn,
        ActivityId: '5e0b2f0b-0000-0000-0000-000000000000',
        StartTime: '2024-06-01T10:00:00.000Z',
        Service: 'AWS Auto Scaling',
        Time: '2024-06-01T10:00:05.000Z',
        EC2InstanceId: instanceId,
        StatusCode: 'InProgress',
        StatusMessage: '',
        Details: { 'Subnet ID': 'subnet-0', 'Availability Zone': 'eu-west-3a' },
        AutoScalingGroupName: group,
        Cause: `At 2024-06-01T10:00:00Z an instance was ${launching ? 'started' : 'taken out of service'} in response to a difference between desired and actual capacity.`,
        Event: event,
      };
  return {
    Records: [
      {
        EventSource: 'aws:sns',
        EventVersion: '1.0',
        EventSubscriptionArn: 'arn:aws:sns:eu-west-3:123456789012:asg-events:0',
        Sns: {
          Type: 'Notification',
          MessageId: '95df01b4-0000-0000-0000-000000000000',
          TopicArn: 'arn:aws:sns:eu-west-3:123456789012:asg-events',
          Subject: `Auto Scaling: ${event.replace('autoscaling:', '')} for group "${group}"`,
          Message: JSON.stringify(message),
          Timestamp: '2024-06-01T10:00:05.000Z',
          SignatureVersion: '1',
          Signature: 'EXAMPLE',
          SigningCertUrl: 'https://sns.eu-west-3.amazonaws.com/SimpleNotificationService-0000000000000000000000000000000.pem',
          UnsubscribeUrl: 'https://sns.eu-west-3.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=arn:aws:sns:eu-west-3:123456789012:asg-events:0',
          MessageAttributes: {},
        },
      },
    ],
  };
}

/** scheduledEvent is what an EventBridge schedule delivers. */
export function scheduledEvent(): unknown {
  return {
    version: '0',
    id: '53dc4d37-0000-0000-0000-000000000000',
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '123456789012',
    time: '2024-06-01T10:05:00Z',
    region: 'eu-west-3',
    resources: ['arn:aws:events:eu-west-3:123456789012:rule/baton-leader-sweep'],
    detail: {},
  };
}
