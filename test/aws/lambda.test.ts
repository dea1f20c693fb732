/**
 * The Lambda handler against AwsFake (test/harness/aws-fake.ts), a stateful fake of the Auto
 * Scaling and EC2 Query APIs — no AWS emulator can run here. The handler and the real AWS SDK
 * run unchanged; AWS_ENDPOINT_URL_* point at the fake. Events are shaped as SNS and EventBridge
 * deliver them.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { AwsFake } from '../harness/aws-fake.js';
import { groupsInEvent, makeReconcileHandler, reconcileHandler } from '../../src/aws/lambda.js';
import { scheduledEvent, snsEvent, useFakeInProcess } from './helpers.js';

const TAG = 'app:isLeader';
let fake: AwsFake;
const lines: string[] = [];
const handler = () => makeReconcileHandler({ log: (l) => lines.push(l) });

before(async () => {
  fake = await AwsFake.start();
  await useFakeInProcess(fake);
});
after(() => fake.stop());

test('groupsInEvent reads SNS Auto Scaling notifications and EventBridge events, and ignores the rest', () => {
  assert.deepEqual(groupsInEvent(snsEvent('a', 'autoscaling:EC2_INSTANCE_TERMINATE')), ['a']);
  assert.deepEqual(groupsInEvent({ source: 'aws.autoscaling', detail: { AutoScalingGroupName: 'b' } }), ['b']);
  assert.deepEqual(groupsInEvent({ Records: [{ Sns: { Message: 'not json' } }] }), []);
  assert.deepEqual(groupsInEvent(scheduledEvent()), []);
  assert.deepEqual(groupsInEvent(null), []);
});

test('the exported handler works as Lambda calls it (env only), for every notification type', async () => {
  fake.createGroup('api');
  const [first] = fake.launch('api', 3);
  for (const ev of ['autoscaling:TEST_NOTIFICATION', 'autoscaling:EC2_INSTANCE_LAUNCH_ERROR', 'autoscaling:EC2_INSTANCE_TERMINATE_ERROR']) {
    const r = await reconcileHandler(snsEvent('api', ev));
    assert.equal(r.groups[0]!.leader, first, ev);
  }
  assert.deepEqual(fake.tagged(TAG, 'api'), [first]);
});

test('BATON_LEADER_TAG changes the tag key', async () => {
  fake.createGroup('custom');
  const [first] = fake.launch('custom', 2);
  await makeReconcileHandler({ env: { ...process.env, BATON_LEADER_TAG: 'team:leader' } })(snsEvent('custom'));
  assert.deepEqual(fake.tagged('team:leader', 'custom'), [first]);
  assert.deepEqual(fake.tagged(TAG, 'custom'), []);
});

test('the scheduled sweep repairs groups named in BATON_GROUPS after a lost notification', async () => {
  fake.createGroup('sweep-a');
  fake.createGroup('sweep-b');
  const [a] = fake.launch('sweep-a', 2);
  const [b] = fake.launch('sweep-b', 2);
  const r = await makeReconcileHandler({ env: { ...process.env, BATON_GROUPS: 'sweep-a, sweep-b' } })(scheduledEvent());
  assert.equal(r.trigger, 'sweep');
  assert.deepEqual(r.groups.map((g) => [g.group, g.leader]), [['sweep-a', a], ['sweep-b', b]]);
});

test('without BATON_GROUPS the sweep finds opted-in groups by tag, across pages of groups', async () => {
  fake.maxPage = 7;
  const names: string[] = [];
  for (let i = 0; i < 20; i++) {
    const name = `fleet-${String(i).padStart(2, '0')}`;
    fake.createGroup(name, { tags: { 'baton:leader-election': 'true' } });
    fake.launch(name, 1);
    names.push(name);
  }
  fake.createGroup('not-opted-in');
  const [untouched] = fake.launch('not-opted-in', 1);
  const before = fake.calls.length;
  const r = await handler()(scheduledEvent());
  fake.maxPage = Infinity;
  assert.deepEqual(r.groups.map((g) => g.group), names);
  for (const g of r.groups) assert.equal(fake.tagged(TAG, g.group).length, 1, g.group);
  assert.equal(fake.instance(untouched!).tags.has(TAG), false);
  const pages = fake.calls.slice(before).filter((c) => c.action === 'DescribeAutoScalingGroups' && c.params.has('Filters.member.1.Name') && c.params.has('NextToken'));
  assert.ok(pages.length >= 2, 'the group listing was paged');
});

test('a failing group makes the handler throw (so Lambda retries) after the others were done', async () => {
  fake.createGroup('ok-group');
  fake.createGroup('bad-group');
  const [ok] = fake.launch('ok-group', 1);
  fake.launch('bad-group', 1);
  // Every CreateTags fails: whichever group gets to it first fails, the other must still be tried.
  fake.failNext('CreateTags', 'UnauthorizedOperation', { status: 403, times: 1 });
  const env = { ...process.env, BATON_GROUPS: 'bad-group,ok-group' };
  await assert.rejects(makeReconcileHandler({ env, log: () => {} })(scheduledEvent()), /reconcile failed for 1 group/);
  const tagged = [...fake.tagged(TAG, 'ok-group'), ...fake.tagged(TAG, 'bad-group')];
  assert.equal(tagged.length, 1, 'the other group was reconciled');
  const retry = await makeReconcileHandler({ env, log: () => {} })(scheduledEvent());
  assert.deepEqual(retry.groups.map((g) => g.leader !== null), [true, true]);
  assert.ok(fake.tagged(TAG, 'ok-group').includes(ok!));
});

test('a name in BATON_GROUPS that matches no group fails the sweep (after the others); a notification for a deleted group does not', async () => {
  fake.createGroup('real-group');
  const [id] = fake.launch('real-group', 1);
  const env = { ...process.env, BATON_GROUPS: 'real-group,raal-group' };
  await assert.rejects(makeReconcileHandler({ env, log: () => {} })(scheduledEvent()), /raal-group: no Auto Scaling group of that name \(BATON_GROUPS\)/);
  assert.deepEqual(fake.tagged(TAG, 'real-group'), [id], 'the existing group was reconciled');
  const r = await makeReconcileHandler({ env, log: () => {} })(snsEvent('deleted-group', 'autoscaling:EC2_INSTANCE_TERMINATE'));
  assert.deepEqual(r.groups.map((g) => [g.group, g.exists]), [['deleted-group', false]]);
});

test('log lines are JSON the CloudWatch console can filter', () => {
  const parsed = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string });
  assert.ok(parsed.some((p) => p.msg === 'reconciled'));
});
