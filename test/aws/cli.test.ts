/**
 * `baton is-leader --strategy asg-lowest|asg-tag` and `baton aws reconcile` as real processes,
 * against AwsFake (test/harness/aws-fake.ts) — a stateful fake of Auto Scaling, EC2 and instance
 * metadata, because no AWS emulator can run here. The CLI finds it only through the standard
 * settings: AWS_ENDPOINT_URL_AUTO_SCALING, AWS_ENDPOINT_URL_EC2, AWS_EC2_METADATA_SERVICE_ENDPOINT,
 * dummy credentials, and no AWS_REGION (the region comes from instance metadata).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { AwsFake } from '../harness/aws-fake.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runBaton, snsEvent, useFakeInProcess } from './helpers.js';

let fake: AwsFake;
before(async () => {
  fake = await AwsFake.start();
  fake.createGroup('web');
  fake.launch('web', 1, { ids: ['i-0aaa'], lifecycle: 'Standby' });
  fake.launch('web', 3, { ids: ['i-0bbb', 'i-0ccc', 'i-0ddd'] });
  fake.instance('i-0bbb').tags.set('app:isLeader', 'web');
  fake.instance('i-0ddd').metadataTags = false;
});
after(() => fake.stop());

const isLeader = async (id: string, args: string[], extra: NodeJS.ProcessEnv = {}) => runBaton(['is-leader', ...args], { ...(await fake.env(id)), ...extra });

test('asg-lowest: exit 0 on the lowest InService instance, 1 elsewhere (Standby does not count)', async () => {
  const [leader, other, standby] = await Promise.all([
    isLeader('i-0bbb', ['--strategy', 'asg-lowest']),
    isLeader('i-0ccc', ['--strategy', 'asg-lowest']),
    isLeader('i-0aaa', ['--strategy', 'asg-lowest']),
  ]);
  assert.deepEqual([leader.code, other.code, standby.code], [0, 1, 1]);
  assert.equal(leader.stdout, '', 'nothing on stdout without --json');
  assert.equal(leader.stderr, '', 'nothing on stderr either (the SDK notice is quieted)');
});

test('asg-lowest --json prints the group, the candidates and the leader', async () => {
  const r = await isLeader('i-0ccc', ['--strategy', 'asg-lowest', '--json']);
  assert.equal(r.code, 1);
  const out = JSON.parse(r.stdout);
  assert.equal(out.group, 'web');
  assert.equal(out.region, fake.region, 'region from instance metadata');
  assert.deepEqual(out.candidates, ['i-0bbb', 'i-0ccc', 'i-0ddd']);
  assert.equal(out.leader, 'i-0bbb');
  assert.equal(out.instanceId, 'i-0ccc');
  assert.equal(out.isLeader, false);
  assert.deepEqual(out.excluded, [{ instanceId: 'i-0aaa', lifecycleState: 'Standby', healthStatus: 'Healthy' }]);
});

test('asg-tag: the tag through instance metadata, or DescribeTags when metadata tags are off', async () => {
  const [tagged, untagged, noMd] = await Promise.all([
    isLeader('i-0bbb', ['--strategy', 'asg-tag', '--json']),
    isLeader('i-0ccc', ['--strategy', 'asg-tag', '--json']),
    isLeader('i-0ddd', ['--strategy', 'asg-tag', '--json']),
  ]);
  assert.deepEqual([tagged.code, untagged.code, noMd.code], [0, 1, 1]);
  assert.deepEqual(JSON.parse(tagged.stdout), { strategy: 'asg-tag', instanceId: 'i-0bbb', tag: 'app:isLeader', value: 'web', source: 'instance-metadata', lifecycleState: 'InService', isLeader: true });
  assert.equal(JSON.parse(noMd.stdout).source, 'DescribeTags');
  fake.instance('i-0ddd').tags.set('team:lead', 'web');
  const custom = await isLeader('i-0ddd', ['--strategy', 'asg-tag', '--tag', 'team:lead']);
  assert.equal(custom.code, 0, 'DescribeTags finds the custom tag');
});

test('exit 69 with one line on stderr when AWS or instance metadata cannot be reached', async () => {
  const closed = await AwsFake.closedEndpoint();
  const api = await isLeader('i-0bbb', ['--strategy', 'asg-lowest'], { AWS_ENDPOINT_URL_AUTO_SCALING: closed, AWS_MAX_ATTEMPTS: '2' });
  assert.equal(api.code, 69);
  assert.match(api.stderr, /^baton: aws: DescribeAutoScalingInstances for instance i-0bbb: .*\n$/);
  const md = await isLeader('i-0bbb', ['--strategy', 'asg-tag'], { AWS_EC2_METADATA_SERVICE_ENDPOINT: closed });
  assert.equal(md.code, 69);
  assert.equal(md.stderr, `baton: aws: instance metadata at ${closed} cannot be reached (ECONNREFUSED)\n`);
  const ec2 = await isLeader('i-0ddd', ['--strategy', 'asg-tag'], { AWS_ENDPOINT_URL_EC2: closed, AWS_MAX_ATTEMPTS: '1' });
  assert.equal(ec2.code, 69);
});

test('exit 69 when throttling outlasts the retries; throttling within them is absorbed', async () => {
  fake.failNext('DescribeAutoScalingGroups', 'Throttling', { times: 2 });
  const absorbed = await isLeader('i-0bbb', ['--strategy', 'asg-lowest'], { AWS_MAX_ATTEMPTS: '3' });
  assert.equal(absorbed.code, 0);
  fake.failNext('DescribeAutoScalingGroups', 'Throttling', { times: 2 });
  const spent = await isLeader('i-0bbb', ['--strategy', 'asg-lowest'], { AWS_MAX_ATTEMPTS: '2' });
  assert.equal(spent.code, 69);
  assert.match(spent.stderr, /Throttling/);
});

test('exit 78 for an instance in no group, and for AWS refusing the call', async () => {
  fake.createGroup('gone');
  const [id] = fake.launch('gone', 1);
  fake.instance(id!).group = null;
  const r = await isLeader(id!, ['--strategy', 'asg-lowest']);
  assert.equal(r.code, 78);
  assert.match(r.stderr, /is not in an Auto Scaling group/);
  fake.failNext('DescribeAutoScalingInstances', 'AccessDenied', { status: 403 });
  const denied = await isLeader('i-0bbb', ['--strategy', 'asg-lowest']);
  assert.equal(denied.code, 78);
  assert.match(denied.stderr, /AccessDenied/);
});

test('exit 78 for an instance in no group with either strategy: "not set up" is not "not the leader" (1)', async () => {
  fake.createGroup('left');
  const [id] = fake.launch('left', 1);
  fake.instance(id!).tags.set('app:isLeader', 'left');
  fake.instance(id!).group = null;
  const [lowest, tag, tagJson] = await Promise.all([
    isLeader(id!, ['--strategy', 'asg-lowest']),
    isLeader(id!, ['--strategy', 'asg-tag']),
    isLeader(id!, ['--strategy', 'asg-tag', '--json']),
  ]);
  assert.deepEqual([lowest.code, tag.code, tagJson.code], [78, 78, 78]);
  assert.equal(tag.stderr, `baton: aws: instance ${id} is not in an Auto Scaling group\n`);
  assert.equal(tagJson.stdout, '', 'no JSON for a configuration error');
});

test('asg-tag: a leader on its way out (Terminating:Wait, Standby) is not the leader even while it keeps the tag', async () => {
  fake.createGroup('leaving');
  const [old, next] = fake.launch('leaving', 2);
  fake.instance(old!).tags.set('app:isLeader', 'leaving');
  assert.equal((await isLeader(old!, ['--strategy', 'asg-tag'])).code, 0);
  fake.instance(old!).lifecycle = 'Terminating:Wait';
  const r = await isLeader(old!, ['--strategy', 'asg-tag', '--json']);
  assert.equal(r.code, 1);
  assert.deepEqual(JSON.parse(r.stdout), {
    strategy: 'asg-tag', instanceId: old, tag: 'app:isLeader', value: 'leaving', source: 'instance-metadata', lifecycleState: 'Terminated', isLeader: false,
  });
  fake.instance(old!).lifecycle = 'Standby';
  assert.equal((await isLeader(old!, ['--strategy', 'asg-tag'])).code, 1);
  fake.instance(next!).metadataTags = false;
  fake.instance(next!).tags.set('app:isLeader', 'leaving');
  fake.instance(next!).lifecycle = 'Standby';
  assert.equal((await isLeader(next!, ['--strategy', 'asg-tag'])).code, 1, 'the same through DescribeTags');
  fake.instance(next!).lifecycle = 'InService';
  assert.equal((await isLeader(next!, ['--strategy', 'asg-tag'])).code, 0);
});

test('baton aws reconcile: a group that does not exist is exit 78; one with no InService member is 0', async () => {
  fake.createGroup('booting');
  fake.launch('booting', 1, { lifecycle: 'Pending' });
  const env = await fake.env();
  const nope = await runBaton(['aws', 'reconcile', '--group', 'nope'], { ...env, AWS_REGION: fake.region });
  assert.equal(nope.code, 78);
  assert.equal(nope.stderr, `baton: aws reconcile: no Auto Scaling group named "nope" in ${fake.region}\n`);
  const both = await runBaton(['aws', 'reconcile', '--group', 'booting', '--group', 'nope', '--json'], { ...env, AWS_REGION: fake.region });
  assert.equal(both.code, 78, 'one missing group fails the run');
  const lines = both.stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => [l.group, l.exists, l.leader]), [['booting', true, null], ['nope', false, null]]);
  const empty = await runBaton(['aws', 'reconcile', '--group', 'booting'], { ...env, AWS_REGION: fake.region });
  assert.equal(empty.code, 0, empty.stderr);
  assert.match(empty.stderr, /booting: leader none \(0 candidate\(s\)\)/);
});

test('baton aws reconcile: a terminated leader whose tag EC2 will not remove does not block the election (exit 0, warning)', async () => {
  fake.createGroup('stuck');
  const [old, next] = fake.launch('stuck', 2);
  const env = { ...(await fake.env()), AWS_REGION: fake.region };
  assert.equal((await runBaton(['aws', 'reconcile', '--group', 'stuck'], env)).code, 0);
  fake.terminate(old!);
  fake.tagWritesOnTerminated = 'IncorrectInstanceState';
  try {
    const r = await runBaton(['aws', 'reconcile', '--group', 'stuck'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`warning: stale app:isLeader left on ${old} .*IncorrectInstanceState`));
    assert.match(r.stderr, new RegExp(`stuck: leader ${next} \\(1 candidate\\(s\\)\\); 1 stale tag\\(s\\) left`));
    assert.equal((await isLeader(next!, ['--strategy', 'asg-tag'])).code, 0, 'the successor leads at once');
    fake.deny('DeleteTags');
    const denied = await runBaton(['aws', 'reconcile', '--group', 'stuck', '--json'], env);
    assert.equal(denied.code, 0, 'a denied clean-up is a warning too');
    assert.deepEqual(JSON.parse(denied.stdout).stale, [old]);
  } finally {
    fake.tagWritesOnTerminated = 'allow';
    fake.allow('DeleteTags');
  }
});

test('usage errors: an unknown strategy, --json with the lease strategy', async () => {
  const env = await fake.env('i-0bbb');
  const bad = await runBaton(['is-leader', '--strategy', 'zookeeper'], env);
  assert.equal(bad.code, 64);
  assert.match(bad.stderr, /zookeeper/);
  const json = await runBaton(['is-leader', '--lock', 'x', '--json'], env);
  assert.equal(json.code, 64);
  assert.match(json.stderr, /--json is available with --strategy/);
});

test('baton aws reconcile tags one member and is-leader --strategy asg-tag agrees', async () => {
  fake.createGroup('cli-rec');
  const [a, b] = fake.launch('cli-rec', 2);
  const env = { ...(await fake.env(a)) };
  const r = await runBaton(['aws', 'reconcile', '--group', 'cli-rec', '--json'], env);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).leader, a);
  assert.equal((await isLeader(a!, ['--strategy', 'asg-tag'])).code, 0);
  assert.equal((await isLeader(b!, ['--strategy', 'asg-tag'])).code, 1);
});

test('without the AWS SDK installed: the lease strategy works, asg-lowest exits 78 naming the package', async () => {
  const noSdk = ['--import', fileURLToPath(new URL('./fixtures/no-aws-sdk.mjs', import.meta.url))];
  const dir = mkdtempSync(join(tmpdir(), 'baton-aws-nosdk-'));
  try {
    const env = { ...(await fake.env('i-0bbb')), BATON_STORE: `sqlite:${join(dir, 'b.db')}` };
    // is-leader never creates a store: an empty file is an empty SQLite database.
    writeFileSync(join(dir, 'b.db'), '');
    const lease = await runBaton(['is-leader', '--lock', 'x'], env, { nodeArgs: noSdk });
    assert.equal(lease.code, 1, lease.stderr);
    assert.equal(lease.stderr, '');
    const lowest = await runBaton(['is-leader', '--strategy', 'asg-lowest'], env, { nodeArgs: noSdk });
    assert.equal(lowest.code, 78);
    assert.equal(lowest.stderr, 'baton: aws: install @aws-sdk/client-auto-scaling to use the AWS features (npm install @aws-sdk/client-auto-scaling)\n');
    const tag = await runBaton(['is-leader', '--strategy', 'asg-tag'], env, { nodeArgs: noSdk });
    assert.equal(tag.code, 0, 'asg-tag through instance metadata needs no SDK at all');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the published entry point: reconcileHandler from the package export "baton/aws" (built dist)', async () => {
  await useFakeInProcess(fake);
  const { reconcileHandler } = (await import('baton-election/aws' as string)) as typeof import('../../src/aws/index.js');
  fake.createGroup('published');
  const [first] = fake.launch('published', 3);
  const r = await reconcileHandler(snsEvent('published'));
  assert.equal(r.groups[0]!.leader, first);
  assert.deepEqual(fake.tagged('app:isLeader', 'published'), [first]);
});
