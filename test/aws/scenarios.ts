/**
 * The AWS scenarios that run on every AwsWorld (test/aws/worlds.ts): the project's fake and moto.
 * Each reconcile*.test.ts file calls `awsScenarios` once on its world; what only the fake can
 * show (throttling, denied or refused calls, held calls, paging, Pending and Terminating:Wait
 * members, instance metadata) stays in the fake's own files.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { connectAws, type AwsApi } from '../../src/aws/api.js';
import { reconcileGroup } from '../../src/aws/reconcile.js';
import { makeReconcileHandler } from '../../src/aws/lambda.js';
import { runBaton, snsEvent } from './helpers.js';
import { useInProcess, type AwsWorld } from './worlds.js';

const TAG = 'app:isLeader';

/** awsScenarios registers the shared scenarios on `world`. */
export function awsScenarios(world: AwsWorld): void {
  let api: AwsApi;
  before(async () => {
    await useInProcess(world);
    api = connectAws({ region: world.region });
  });
  after(() => api.close());

  let n = 0;
  async function newGroup(size: number): Promise<{ group: string; ids: string[] }> {
    const group = `web-${world.name}-${++n}`;
    await world.createGroup(group);
    return { group, ids: size > 0 ? await world.launch(group, size) : [] };
  }
  const reconcile = (group: string) => reconcileGroup(api, group, { tag: TAG });
  const taggedFor = (group: string) => world.tagged(TAG, group);

  describe(`reconcileGroup on ${world.name}`, () => {
    test('tags the lowest InService instance of a new group, and is a no-op when run again', async () => {
      const { group, ids } = await newGroup(3);
      const r = await reconcile(group);
      assert.deepEqual({ leader: r.leader, added: r.added }, { leader: ids[0], added: ids[0] });
      assert.deepEqual(await taggedFor(group), [ids[0]], 'one instance tagged, the value naming the group');
      const again = await reconcile(group);
      assert.deepEqual({ leader: again.leader, added: again.added, removed: again.removed, rounds: again.rounds }, { leader: ids[0], added: null, removed: [], rounds: 1 });
    });

    test('scale out keeps the current leader; so does a tagged leader with lower ids beside it', async () => {
      const { group, ids } = await newGroup(2);
      const leader = (await reconcile(group)).leader;
      const joined = await world.launch(group, 6);
      assert.equal((await reconcile(group)).leader, leader);
      assert.deepEqual(await taggedFor(group), [leader]);
      // Whether or not a newcomer sorted lower above (the ids are random), this one does: the
      // highest member carries the tag and every other member has a lower id.
      const other = await newGroup(4);
      await world.setTag(other.ids[3]!, TAG, other.group);
      assert.equal((await reconcile(other.group)).leader, other.ids[3]);
      assert.deepEqual(await taggedFor(other.group), [other.ids[3]]);
      assert.equal(ids.length + joined.length, 8);
    });

    test('leader terminated: the tag moves to the lowest remaining candidate and leaves the dead instance', async () => {
      const { group, ids } = await newGroup(3);
      await reconcile(group);
      await world.terminate(ids[0]!);
      assert.deepEqual(await taggedFor(group), [ids[0]], 'the terminated instance keeps its tag');
      const r = await reconcile(group);
      assert.equal(r.leader, ids[1]);
      assert.deepEqual(r.removed, [ids[0]]);
      assert.deepEqual(await taggedFor(group), [ids[1]]);
    });

    test('a leader put in Standby, or turning Unhealthy, loses the tag; back from Standby it does not take over', async () => {
      const { group, ids } = await newGroup(3);
      await reconcile(group);
      await world.standby(group, ids[0]!);
      assert.equal((await reconcile(group)).leader, ids[1]);
      await world.unhealthy(ids[1]!);
      assert.equal((await reconcile(group)).leader, ids[2]);
      assert.deepEqual(await taggedFor(group), [ids[2]]);
    });

    test('all instances terminated, then new ones launched: the group gets a leader again (seed 004)', async () => {
      const { group, ids } = await newGroup(2);
      await reconcile(group);
      for (const id of ids) await world.terminate(id);
      const empty = await reconcile(group);
      assert.deepEqual({ leader: empty.leader, candidates: empty.candidates }, { leader: null, candidates: 0 });
      assert.deepEqual(await taggedFor(group), [], 'no tag survives on the terminated instances');
      const fresh = await world.launch(group, 2);
      assert.equal((await reconcile(group)).leader, fresh[0]);
      assert.deepEqual(await taggedFor(group), [fresh[0]]);
    });

    test('a tag propagated to every instance (value "true") is cut down to one, relabelled', async () => {
      const { group, ids } = await newGroup(5);
      for (const id of ids) await world.setTag(id, TAG, 'true');
      const r = await reconcile(group);
      assert.equal(r.leader, ids[0]);
      assert.equal(r.removed.length, 4);
      assert.deepEqual((await world.tagged(TAG)).filter((id) => ids.includes(id)), [ids[0]]);
      assert.deepEqual(await taggedFor(group), [ids[0]], 'the kept tag now names the group');
    });

    test('a deleted group: tags naming it are removed, another group\'s leader is untouched', async () => {
      const other = await newGroup(1);
      await reconcile(other.group);
      const { group, ids } = await newGroup(1);
      await reconcile(group);
      await world.deleteGroup(group);
      const r = await reconcile(group);
      assert.equal(r.exists, false);
      assert.deepEqual(await taggedFor(group), []);
      assert.deepEqual(await taggedFor(other.group), other.ids);
      assert.equal(ids.length, 1);
    });

    test('two runs over the same state choose the same leader and leave one tagged', async () => {
      for (let round = 0; round < 4; round++) {
        const { group, ids } = await newGroup(5);
        const [a, b] = await Promise.all([reconcile(group), reconcile(group)]);
        assert.deepEqual([a.leader, b.leader], [ids[0], ids[0]]);
        assert.deepEqual(await taggedFor(group), [ids[0]]);
      }
    });
  });

  describe(`the Lambda handler fed SNS Auto Scaling notifications on ${world.name} (seed 000)`, () => {
    const lines: string[] = [];
    const handler = makeReconcileHandler({ log: (l) => lines.push(l) });
    /** The one check that matters: exactly one InService member tagged, and no other tag naming the group. */
    async function assertOneLeader(group: string): Promise<string> {
      const live = await world.inService(group);
      const tagged = await taggedFor(group);
      assert.equal(tagged.length, 1, `one tagged (${tagged.join(', ')})`);
      assert.ok(live.includes(tagged[0]!), `the tagged instance ${tagged[0]} is InService (${live.join(', ')})`);
      return tagged[0]!;
    }

    test('test notification, launches, the leader\'s termination: one InService instance tagged after each', async () => {
      const { group, ids } = await newGroup(3);
      // Configuring the notification sends TEST_NOTIFICATION: the group gets its leader.
      await handler(snsEvent(group, 'autoscaling:TEST_NOTIFICATION'));
      assert.equal(await assertOneLeader(group), ids[0]);
      // Scale out: one launch notification per instance, in any order, some twice.
      const joined = await world.launch(group, 3);
      for (const id of [...joined].reverse()) await handler(snsEvent(group, 'autoscaling:EC2_INSTANCE_LAUNCH', id));
      await handler(snsEvent(group, 'autoscaling:EC2_INSTANCE_LAUNCH', joined[0]));
      assert.equal(await assertOneLeader(group), ids[0], 'scale out does not move the leader');
      // The leader is terminated: the terminate notification moves the tag to the lowest candidate.
      await world.terminate(ids[0]!);
      const r = await handler(snsEvent(group, 'autoscaling:EC2_INSTANCE_TERMINATE', ids[0]));
      const next = [...ids.slice(1), ...joined].sort()[0];
      assert.equal(r.groups[0]!.leader, next);
      assert.equal(await assertOneLeader(group), next);
      assert.equal((await world.tagged(TAG)).includes(ids[0]!), false, 'the void tag on the terminated instance is cleaned up');
    });

    test('the whole group terminated, then relaunched: the first launch notification elects a leader', async () => {
      const { group, ids } = await newGroup(2);
      await handler(snsEvent(group, 'autoscaling:EC2_INSTANCE_LAUNCH', ids[1]));
      for (const id of ids) await world.terminate(id);
      const night = await handler(snsEvent(group, 'autoscaling:EC2_INSTANCE_TERMINATE', ids[0]));
      assert.equal(night.groups[0]!.leader, null);
      assert.deepEqual(await taggedFor(group), []);
      const fresh = await world.launch(group, 2);
      const morning = await handler(snsEvent(group, 'autoscaling:EC2_INSTANCE_LAUNCH', fresh[1]));
      assert.equal(morning.trigger, 'notification');
      assert.equal(await assertOneLeader(group), fresh[0]);
    });
  });

  describe(`baton aws reconcile (CLI) on ${world.name}`, () => {
    test('settles a group (exit 0, JSON names the leader); a missing group exits 78', async () => {
      const { group, ids } = await newGroup(2);
      const env = await world.apiEnv();
      const ok = await runBaton(['aws', 'reconcile', '--group', group, '--json'], env);
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(JSON.parse(ok.stdout).leader, ids[0]);
      assert.deepEqual(await taggedFor(group), [ids[0]]);
      const missing = await runBaton(['aws', 'reconcile', '--group', `${group}-typo`], env);
      assert.equal(missing.code, 78, missing.stderr);
      assert.match(missing.stderr, new RegExp(`${group}-typo`));
      assert.equal(missing.stderr.trim().split('\n').length, 1, `one line: ${missing.stderr}`);
    });
  });
}
