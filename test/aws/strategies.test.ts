/**
 * asg-lowest, asg-tag, IMDSv2 and AWS error handling against AwsFake (test/harness/aws-fake.ts):
 * a stateful fake of the Auto Scaling and EC2 Query APIs and of instance metadata, because no
 * AWS emulator can run here. baton's code and the real AWS SDK v3 run unchanged; the SDK reaches
 * the fake through AWS_ENDPOINT_URL_*, baton's metadata client through its endpoint setting.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { AwsFake } from '../harness/aws-fake.js';
import { checkLowest } from '../../src/aws/lowest.js';
import { checkLeaderTag, leaderTagKey } from '../../src/aws/leader-tag.js';
import { InstanceMetadata } from '../../src/aws/imds.js';
import { connectAws } from '../../src/aws/api.js';
import { AwsRequestError, AwsUnavailableError } from '../../src/aws/errors.js';
import { loadSdkModule } from '../../src/aws/sdk.js';
import { InvalidConfigError } from '../../src/core/errors.js';
import { ExitCode, exitCodeFor } from '../../src/cli/exit-codes.js';
import { useFakeInProcess } from './helpers.js';

let fake: AwsFake;
before(async () => {
  fake = await AwsFake.start();
  await useFakeInProcess(fake);
});
after(() => fake.stop());

const imdsFor = async (id: string) => new InstanceMetadata({ endpoint: await fake.metadataEndpoint(id) });

describe('instance metadata (IMDSv2)', () => {
  test('uses a session token; a GET without one is refused by the service', async () => {
    fake.createGroup('imds');
    const [id] = fake.launch('imds', 1);
    const endpoint = await fake.metadataEndpoint(id!);
    assert.equal((await fetch(`${endpoint}/latest/meta-data/instance-id`)).status, 401, 'IMDSv1-style GET refused');
    const imds = new InstanceMetadata({ endpoint });
    assert.equal(await imds.instanceId(), id);
    assert.equal(await imds.region(), fake.region);
    assert.equal(await imds.get('no/such/path'), null);
  });

  test('an unreachable metadata service is AwsUnavailableError (exit 69)', async () => {
    const imds = new InstanceMetadata({ endpoint: await AwsFake.closedEndpoint(), timeoutMs: 1000 });
    await assert.rejects(imds.instanceId(), (err: unknown) => err instanceof AwsUnavailableError && exitCodeFor(err) === 69 && /ECONNREFUSED/.test(err.message));
  });
});

describe('asg-lowest', () => {
  test('the lowest InService, Healthy member leads; Pending, Standby, Terminating and Unhealthy never count', async () => {
    fake.createGroup('lowest');
    fake.launch('lowest', 1, { ids: ['i-01'], lifecycle: 'Pending' });
    fake.launch('lowest', 1, { ids: ['i-02'], lifecycle: 'Standby' });
    fake.launch('lowest', 1, { ids: ['i-03'], lifecycle: 'Terminating:Wait' });
    fake.launch('lowest', 1, { ids: ['i-04'] });
    fake.instance('i-04').healthy = false;
    fake.launch('lowest', 2, { ids: ['i-06', 'i-05'] });
    const other = fake.createGroup('other-group');
    fake.launch(other.name, 1, { ids: ['i-00'] });
    const r = await checkLowest({ imds: await imdsFor('i-05') });
    assert.equal(r.group, 'lowest');
    assert.deepEqual(r.candidates, ['i-05', 'i-06']);
    assert.equal(r.leader, 'i-05');
    assert.equal(r.isLeader, true);
    assert.deepEqual(r.excluded.map((e) => e.instanceId).sort(), ['i-01', 'i-02', 'i-03', 'i-04']);
    assert.equal((await checkLowest({ imds: await imdsFor('i-06') })).isLeader, false);
    const standby = await checkLowest({ imds: await imdsFor('i-02') });
    assert.equal(standby.isLeader, false, 'a Standby instance with the lowest id does not lead');
    assert.equal(standby.leader, 'i-05');
  });

  test('a terminated leader stops counting at once (seed 001 counted it while its tags lingered)', async () => {
    fake.createGroup('lowest-term');
    const [a, b] = fake.launch('lowest-term', 2);
    assert.equal((await checkLowest({ imds: await imdsFor(b!) })).isLeader, false);
    fake.terminate(a!);
    assert.equal((await checkLowest({ imds: await imdsFor(b!) })).isLeader, true);
  });

  test('1,000 instances: the answer is the same from every instance', async () => {
    fake.createGroup('big');
    const ids = fake.launch('big', 1000);
    const lowest = [...ids].sort()[0]!;
    const sample = [ids[999]!, ids[500]!, lowest];
    const results = await Promise.all(sample.map(async (id) => checkLowest({ imds: await imdsFor(id) })));
    assert.deepEqual(results.map((r) => r.isLeader), [false, false, true]);
    assert.ok(results.every((r) => r.candidates.length === 1000 && r.leader === lowest));
  });

  test('an instance in no group is a configuration error (exit 78)', async () => {
    fake.createGroup('tmp');
    const [id] = fake.launch('tmp', 1);
    fake.instance(id!).group = null;
    await assert.rejects(checkLowest({ imds: await imdsFor(id!) }), (err: unknown) => err instanceof AwsRequestError && exitCodeFor(err) === ExitCode.config);
  });
});

describe('asg-tag', () => {
  test('reads the tag from instance metadata when metadata tags are on', async () => {
    fake.createGroup('tagged');
    const [a, b] = fake.launch('tagged', 2);
    fake.instance(a!).tags.set('app:isLeader', 'tagged');
    const before = fake.calls.length;
    const yes = await checkLeaderTag({ imds: await imdsFor(a!) });
    const no = await checkLeaderTag({ imds: await imdsFor(b!) });
    assert.deepEqual([yes.isLeader, yes.value, yes.source], [true, 'tagged', 'instance-metadata']);
    assert.deepEqual([no.isLeader, no.value, no.source], [false, null, 'instance-metadata']);
    assert.equal(fake.calls.length, before, 'no API call was needed');
  });

  test('metadata tags off (404): falls back to DescribeTags', async () => {
    fake.createGroup('no-md-tags');
    const [a, b] = fake.launch('no-md-tags', 2, { metadataTags: false });
    fake.instance(a!).tags.set('app:isLeader', 'no-md-tags');
    const yes = await checkLeaderTag({ imds: await imdsFor(a!) });
    const no = await checkLeaderTag({ imds: await imdsFor(b!) });
    assert.deepEqual([yes.isLeader, yes.source], [true, 'DescribeTags']);
    assert.deepEqual([no.isLeader, no.source], [false, 'DescribeTags']);
    assert.ok(fake.calls.some((c) => c.action === 'DescribeTags' && [...c.params.values()].includes(a!)));
  });

  test('a key instance metadata cannot serve (a space) goes straight to DescribeTags', async () => {
    fake.createGroup('odd-key');
    const [a] = fake.launch('odd-key', 1);
    fake.instance(a!).tags.set('team lead', 'odd-key');
    const r = await checkLeaderTag({ tag: 'team lead', imds: await imdsFor(a!) });
    assert.deepEqual([r.isLeader, r.source], [true, 'DescribeTags']);
  });

  test('tag keys are validated', () => {
    assert.equal(leaderTagKey(undefined, {}), 'app:isLeader');
    assert.equal(leaderTagKey(undefined, { BATON_LEADER_TAG: 'x:y' }), 'x:y');
    assert.throws(() => leaderTagKey('aws:foo', {}), InvalidConfigError);
    assert.throws(() => leaderTagKey('', {}), InvalidConfigError);
  });
});

describe('AWS errors', () => {
  test('throttling that outlasts the retries is AwsUnavailableError (69); a refused request is AwsRequestError (78)', async () => {
    fake.createGroup('errs');
    const api = connectAws({ region: fake.region, maxAttempts: 2 });
    try {
      fake.failNext('DescribeAutoScalingGroups', 'Throttling', { times: 2 });
      await assert.rejects(api.groupInstances('errs'), (err: unknown) => err instanceof AwsUnavailableError && /Throttling/.test((err as Error).message));
      fake.failNext('DescribeTags', 'RequestLimitExceeded', { times: 2, status: 503 });
      await assert.rejects(api.tagsWithKey('k'), AwsUnavailableError);
      fake.failNext('DescribeAutoScalingGroups', 'AccessDenied', { status: 403 });
      await assert.rejects(api.groupInstances('errs'), (err: unknown) => err instanceof AwsRequestError && err.code === 'AccessDenied' && exitCodeFor(err) === 78);
      assert.deepEqual(await api.groupInstances('errs'), [], 'and the next call works');
    } finally {
      api.close();
    }
  });

  test('an unreachable API endpoint is AwsUnavailableError', async () => {
    const saved = process.env.AWS_ENDPOINT_URL_AUTO_SCALING;
    process.env.AWS_ENDPOINT_URL_AUTO_SCALING = await AwsFake.closedEndpoint();
    const api = connectAws({ region: fake.region, maxAttempts: 1 });
    try {
      await assert.rejects(api.groupInstances('x'), AwsUnavailableError);
    } finally {
      api.close();
      process.env.AWS_ENDPOINT_URL_AUTO_SCALING = saved;
    }
  });

  test('a page token is bound to its query (the fake rejects a mismatched one, like AWS)', async () => {
    const { DescribeTagsCommand, EC2Client } = await import('@aws-sdk/client-ec2');
    const ec2 = new EC2Client({ region: fake.region, maxAttempts: 1 });
    try {
      fake.createGroup('tokens');
      fake.launch('tokens', 10);
      fake.maxPage = 5;
      const first = await ec2.send(new DescribeTagsCommand({ Filters: [{ Name: 'resource-type', Values: ['instance'] }] }));
      assert.ok(first.NextToken);
      await assert.rejects(ec2.send(new DescribeTagsCommand({ Filters: [{ Name: 'key', Values: ['x'] }], NextToken: first.NextToken })), /not valid/);
    } finally {
      fake.maxPage = Infinity;
      ec2.destroy();
    }
  });

  test('a missing SDK package is a one-line configuration error naming it (exit 78)', async () => {
    await assert.rejects(loadSdkModule('@aws-sdk/client-not-installed'), (err: unknown) => {
      assert.ok(err instanceof InvalidConfigError);
      assert.equal(exitCodeFor(err), 78);
      assert.match(err.message, /install @aws-sdk\/client-not-installed/);
      return true;
    });
  });
});
