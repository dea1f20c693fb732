/**
 * The leader-tag reconciler against AwsFake (test/harness/aws-fake.ts), the project's stateful
 * fake of the Auto Scaling and EC2 Query APIs: the shared scenarios (test/aws/scenarios.ts, also
 * run on moto by reconcile-moto.test.ts), then what only the fake can show — Pending and
 * Terminating:Wait members, throttling, paging, refused and denied calls, held calls that force
 * an interleaving, and "never two tagged, even for a moment". baton's code and the real AWS SDK
 * v3 run unchanged; only the endpoints (AWS_ENDPOINT_URL_*) point at the fake.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import { connectAws, type AwsApi } from '../../src/aws/api.js';
import { reconcileGroup } from '../../src/aws/reconcile.js';
import { AwsRequestError } from '../../src/aws/errors.js';
import { exitCodeFor } from '../../src/cli/exit-codes.js';
import { useFakeInProcess } from './helpers.js';
import { awsScenarios } from './scenarios.js';
import { FakeWorld } from './worlds.js';

const TAG = 'app:isLeader';
const world = await FakeWorld.start();
const fake = world.fake;
let api: AwsApi;

awsScenarios(world);

before(async () => {
  await useFakeInProcess(fake);
  api = connectAws({ region: fake.region });
});
after(() => api.close());

let n = 0;
function newGroup(size: number, ids?: string[]): { group: string; ids: string[] } {
  const group = `web-${++n}`;
  fake.createGroup(group);
  return { group, ids: fake.launch(group, size, { ids }) };
}

/** The instances of `group` (members or not) whose leader tag names it. */
const taggedFor = (group: string) => fake.tagged(TAG, group);
const reconcile = (group: string) => reconcileGroup(api, group, { tag: TAG });

describe('reconcileGroup', () => {
  beforeEach(() => {
    fake.throttleRate = 0;
    fake.jitterMs = 0;
    fake.maxPage = Infinity;
  });

  test('a leader going Terminating:Wait loses the tag (Standby and Unhealthy: test/aws/scenarios.ts)', async () => {
    const { group } = newGroup(2, ['i-21', 'i-22']);
    await reconcile(group);
    fake.instance('i-21').lifecycle = 'Terminating:Wait';
    assert.equal((await reconcile(group)).leader, 'i-22');
    assert.deepEqual(taggedFor(group), ['i-22']);
  });

  test('Pending instances are never chosen', async () => {
    const { group } = newGroup(0);
    fake.launch(group, 2, { ids: ['i-31', 'i-32'], lifecycle: 'Pending' });
    const r = await reconcile(group);
    assert.equal(r.leader, null);
    assert.deepEqual(taggedFor(group), []);
    fake.instance('i-32').lifecycle = 'InService';
    assert.equal((await reconcile(group)).leader, 'i-32');
  });

  test('an instance moved from another group keeps leading its new group, relabelled', async () => {
    const { group: a, ids: [moved] } = newGroup(1, ['i-0e1']);
    const { group: b } = newGroup(1, ['i-0e2']);
    await reconcile(a);
    assert.deepEqual(taggedFor(a), ['i-0e1']);
    // Detach from a, attach to b as its lowest member.
    fake.instance(moved!).group = b;
    assert.equal((await reconcile(b)).leader, 'i-0e1');
    assert.deepEqual(taggedFor(b), ['i-0e1']);
    assert.equal((await reconcile(a)).leader, null);
    assert.deepEqual(taggedFor(b), ['i-0e1'], 'a\'s reconciler no longer claims it');
  });

  test('throttling: Throttling / RequestLimitExceeded answers are retried with backoff', async () => {
    const { group } = newGroup(4);
    await reconcile(group);
    fake.terminate(fake.members(group)[0]!);
    const before = fake.throttled;
    fake.throttleRate = 0.3;
    const r = await reconcile(group);
    fake.throttleRate = 0;
    assert.equal(r.leader, fake.members(group)[0]);
    assert.deepEqual(taggedFor(group), [r.leader]);
    assert.ok(fake.throttled > before, 'the fake did throttle some calls');
  });

  test('1,000 instances across pages: all tagged by mistake, one remains', async () => {
    const { group, ids } = newGroup(1000);
    for (const id of ids) fake.instance(id).tags.set(TAG, 'true');
    fake.maxPage = 37;
    const callsBefore = fake.calls.length;
    const r = await reconcile(group);
    const calls = fake.calls.slice(callsBefore);
    assert.equal(r.leader, [...ids].sort()[0]);
    assert.equal(r.removed.length, 999);
    assert.deepEqual(fake.tagged(TAG).filter((id) => ids.includes(id)), [r.leader]);
    const pages = calls.filter((c) => c.action === 'DescribeTags' && c.params.has('NextToken')).length;
    assert.ok(pages >= 1000 / 37 - 1, `DescribeTags followed NextToken (${pages} continuation pages)`);
    const deletes = calls.filter((c) => c.action === 'DeleteTags');
    assert.ok(deletes.length >= 10, 'DeleteTags went out in batches');
    assert.ok(deletes.every((c) => !c.params.has('ResourceId.101')), 'no batch above 100 ids');
  });

  test('partial failure: a failed CreateTags leaves no leader (never two); the next run repairs', async () => {
    const { group, ids } = newGroup(3);
    await reconcile(group);
    fake.terminate(ids[0]!);
    fake.failNext('CreateTags', 'UnauthorizedOperation', { status: 403 });
    await assert.rejects(reconcile(group), AwsRequestError);
    assert.deepEqual(taggedFor(group), [ids[0]], 'only the terminated instance\'s void tag; the new one was never added');
    const r = await reconcile(group);
    assert.equal(r.leader, ids[1]);
    assert.deepEqual(r.removed, [ids[0]], 'the void tag is cleaned up once the new leader is tagged');
    assert.deepEqual(taggedFor(group), [ids[1]]);
  });

  test('partial failure: DeleteTags failing half-way never adds a second tag', async () => {
    const { group, ids } = newGroup(250);
    for (const id of ids) fake.instance(id).tags.set(TAG, 'true');
    fake.failNext('DeleteTags', 'UnauthorizedOperation', { status: 403, after: 1 });
    await assert.rejects(reconcile(group), AwsRequestError);
    const still = fake.tagged(TAG).filter((id) => ids.includes(id));
    assert.equal(still.length, 150, 'the first batch of 100 went through, the second failed');
    assert.ok(still.includes(ids[0]!), 'the chosen leader kept its tag');
    assert.equal((await reconcile(group)).removed.length, 149);
    assert.equal(fake.tagged(TAG).filter((id) => ids.includes(id)).length, 1);
  });

  test('partial failure: a live member\'s tag that cannot be removed still blocks the add (never two leaders)', async () => {
    const { group, ids } = newGroup(3);
    for (const id of ids) fake.instance(id).tags.set(TAG, group);
    fake.deny('DeleteTags', [ids[2]!]);
    try {
      await assert.rejects(reconcile(group), (err: unknown) => err instanceof AwsRequestError && exitCodeFor(err) === 78 && new RegExp(`^aws: DeleteTags app:isLeader on instances? .*${ids[2]}.*: UnauthorizedOperation`).test(err.message));
    } finally {
      fake.allow('DeleteTags');
    }
    assert.deepEqual(taggedFor(group), ids, 'nothing removed: the one request naming the denied instance failed as a whole');
  });
});

test('a refused or unreachable call is one line naming the call and the resource: AccessDenied 78, unreachable 69', async () => {
  const { group } = newGroup(1);
  fake.deny('DescribeAutoScalingGroups');
  try {
    await assert.rejects(reconcile(group), (err: unknown) => {
      assert.ok(err instanceof AwsRequestError);
      assert.equal(exitCodeFor(err), 78);
      assert.match(err.message, new RegExp(`^aws: DescribeAutoScalingGroups for group "${group}": AccessDenied: [^\\n]*$`));
      return true;
    });
  } finally {
    fake.allow('DescribeAutoScalingGroups');
  }
  // Two attempts, both answered 500: the SDK's retry is spent, AWS counts as unavailable.
  fake.failNext('DescribeTags', 'InternalError', { status: 500, times: 2 });
  const twoAttempts = connectAws({ region: fake.region, maxAttempts: 2 });
  try {
    await assert.rejects(reconcileGroup(twoAttempts, group, { tag: TAG }), (err: unknown) => {
      assert.equal(exitCodeFor(err), 69);
      assert.match((err as Error).message, /^aws: DescribeTags for app:isLeader[^\n]*: InternalError/);
      return true;
    });
  } finally {
    twoAttempts.close();
  }
});

describe('void tags: a tag that cannot be removed does not block a new leader', () => {
  afterEach(() => {
    fake.tagWritesOnTerminated = 'allow';
    fake.allow('DeleteTags');
  });

  test('terminated leader, DeleteTags refused with IncorrectInstanceState: the successor is tagged, exit 0 with a warning', async () => {
    const { group, ids } = newGroup(3, ['i-0v1', 'i-0v2', 'i-0v3']);
    await reconcile(group);
    fake.terminate('i-0v1');
    fake.tagWritesOnTerminated = 'IncorrectInstanceState';
    const lines: string[] = [];
    const r = await reconcileGroup(api, group, { tag: TAG, log: (l) => lines.push(l) });
    assert.equal(r.leader, 'i-0v2');
    assert.equal(r.added, 'i-0v2');
    assert.deepEqual(r.stale, ['i-0v1'], 'the terminated instance keeps its tag, reported');
    assert.deepEqual(r.removed, []);
    assert.equal(r.warnings.length, 1);
    assert.match(r.warnings[0]!, /stale app:isLeader left on i-0v1 .*IncorrectInstanceState/);
    assert.ok(lines.some((l) => /warning/.test(l)), 'the warning is logged');
    assert.deepEqual(taggedFor(group), ['i-0v1', 'i-0v2']);
    assert.equal(fake.instance('i-0v2').tags.get(TAG), group);
    // The next run (a sweep) is still clean and quiet: the void tag is tried again and left again.
    const again = await reconcile(group);
    assert.deepEqual({ leader: again.leader, added: again.added, stale: again.stale }, { leader: 'i-0v2', added: null, stale: ['i-0v1'] });
    assert.equal(ids.length, 3);
    // Once EC2 lets go (or the instance disappears), the sweep removes it.
    fake.tagWritesOnTerminated = 'allow';
    const clean = await reconcile(group);
    assert.deepEqual(clean.removed, ['i-0v1']);
    assert.deepEqual(taggedFor(group), ['i-0v2']);
  });

  test('leader going Terminating:Wait whose tag removal is denied: the successor is tagged at once', async () => {
    const { group } = newGroup(2, ['i-0w1', 'i-0w2']);
    await reconcile(group);
    fake.instance('i-0w1').lifecycle = 'Terminating:Wait';
    fake.deny('DeleteTags', ['i-0w1']);
    const r = await reconcile(group);
    assert.equal(r.leader, 'i-0w2');
    assert.deepEqual(r.stale, ['i-0w1']);
    assert.match(r.warnings.join('\n'), /UnauthorizedOperation/);
    assert.deepEqual(taggedFor(group), ['i-0w1', 'i-0w2']);
  });

  test('several void tags, one refused: the others are still cleaned up', async () => {
    const { group } = newGroup(4, ['i-0x1', 'i-0x2', 'i-0x3', 'i-0x4']);
    for (const id of ['i-0x1', 'i-0x2', 'i-0x3']) fake.instance(id).tags.set(TAG, group);
    fake.instance('i-0x1').lifecycle = 'Standby';
    fake.instance('i-0x2').lifecycle = 'Detaching';
    fake.terminate('i-0x3');
    fake.tagWritesOnTerminated = 'IncorrectInstanceState';
    const r = await reconcile(group);
    assert.equal(r.leader, 'i-0x4');
    assert.deepEqual(r.removed, ['i-0x1', 'i-0x2']);
    assert.deepEqual(r.stale, ['i-0x3']);
    assert.deepEqual(taggedFor(group), ['i-0x3', 'i-0x4']);
  });

  test('a group that does not exist is reported (exists: false); one with no InService member exists', async () => {
    const r = await reconcile('no-such-group');
    assert.deepEqual({ exists: r.exists, leader: r.leader }, { exists: false, leader: null });
    const described = fake.calls.filter((c) => c.action === 'DescribeAutoScalingGroups' && c.params.get('AutoScalingGroupNames.member.1') === 'no-such-group');
    assert.ok(described.length > 0, 'asked AWS, which answered an empty list');
    const { group } = newGroup(0);
    fake.launch(group, 1, { lifecycle: 'Pending' });
    const empty = await reconcile(group);
    assert.deepEqual({ exists: empty.exists, leader: empty.leader, candidates: empty.candidates }, { exists: true, leader: null, candidates: 0 });
  });
});

describe('concurrent reconciles', () => {
  before(() => {
    fake.jitterMs = 8;
  });
  after(() => {
    fake.jitterMs = 0;
  });

  test('two runs over the same state never tag two instances, even for a moment', async () => {
    for (let round = 0; round < 8; round++) {
      const { group } = newGroup(5);
      fake.maxTagged.delete(group);
      const [a, b] = await Promise.all([reconcile(group), reconcile(group)]);
      assert.equal(a.leader, b.leader);
      assert.deepEqual(taggedFor(group), [a.leader]);
      assert.equal(fake.maxTagged.get(group), 1, 'at most one instance carried the tag at any time');
    }
  });

  test('a run whose add lands after another run finished removes the extra tag before returning', async () => {
    // Forced interleaving: run 1 reads B, C as candidates and is about to tag B; meanwhile A goes
    // InService and run 2 tags A and returns. Run 1's delayed add makes two tagged — its own
    // verifying round must take one away again.
    const { group } = newGroup(2, ['i-0b1', 'i-0c1']);
    fake.launch(group, 1, { ids: ['i-0a1'], lifecycle: 'Pending' });
    const held = fake.hold('CreateTags');
    const first = reconcile(group);
    await held.reached;
    fake.instance('i-0a1').lifecycle = 'InService';
    const second = await reconcile(group);
    assert.equal(second.leader, 'i-0a1');
    assert.deepEqual(taggedFor(group), ['i-0a1']);
    held.release();
    const r = await first;
    assert.deepEqual(taggedFor(group), ['i-0a1'], 'one tagged after both returned');
    assert.equal(r.leader, 'i-0a1');
    assert.equal(fake.maxTagged.get(group), 2, 'the delayed add did make two tagged for a moment');
  });

  test('two runs straddling membership changes: exactly one current candidate tagged once both return', async () => {
    const { group } = newGroup(3);
    await reconcile(group);
    for (let round = 0; round < 10; round++) {
      const first = reconcile(group);
      await new Promise((r) => setTimeout(r, Math.random() * 20));
      // Change who may lead while the first run is in flight: a lower id joins, the leader dies.
      fake.launch(group, 1, { ids: [`i-00${round}`] });
      const leader = taggedFor(group)[0];
      if (leader && round % 2 === 0) fake.terminate(leader);
      const second = reconcile(group);
      await Promise.all([first, second]);
      const candidates = fake.members(group).filter((id) => fake.instance(id).lifecycle === 'InService');
      const tagged = taggedFor(group);
      assert.equal(tagged.length, 1, `round ${round}: one tagged (${tagged.join(', ')})`);
      assert.ok(candidates.includes(tagged[0]!), `round ${round}: the tagged instance is a current candidate`);
    }
  });
});
