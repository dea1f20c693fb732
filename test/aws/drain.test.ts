/**
 * Hand-over before termination: a real elector (or a real `baton run` process) holds a lease in
 * a real SQLite store; Auto Scaling and instance metadata are AwsFake (test/harness/aws-fake.ts),
 * a stateful fake of their wire protocols, because no AWS emulator can run here. The instance is
 * put in Terminating:Wait behind a lifecycle hook, as a scale-in would.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { AwsFake } from '../harness/aws-fake.js';
import { LeaderElector } from '../../src/core/elector.js';
import type { StoppedEvent } from '../../src/core/elector.js';
import { SqliteStore } from '../../src/stores/sqlite/index.js';
import { drainInstance } from '../../src/aws/drain.js';
import { drainExitCode } from '../../src/cli/commands/aws.js';
import { waitForTermination } from '../../src/aws/watch-termination.js';
import { InstanceMetadata } from '../../src/aws/imds.js';
import { AwsRequestError } from '../../src/aws/errors.js';
import { StoreUnavailableError } from '../../src/core/errors.js';
import { BatonChild, runBaton, useFakeInProcess, waitFor } from './helpers.js';

const LEASE = { leaseDurationMs: 20_000, renewDeadlineMs: 15_000, retryPeriodMs: 500 };
let fake: AwsFake;
let dir: string;
before(async () => {
  fake = await AwsFake.start();
  await useFakeInProcess(fake);
  dir = mkdtempSync(join(tmpdir(), 'baton-aws-drain-'));
});
after(async () => {
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
});

function newInstance(group: string): string {
  fake.createGroup(group, { hooks: ['baton-drain'] });
  return fake.launch(group, 1)[0]!;
}

describe('drainInstance', () => {
  test('the local leader steps down and releases well within a lease; then the lifecycle action completes', async (t) => {
    const id = newInstance('drain-lib');
    const store = new SqliteStore(join(dir, 'lib.db'));
    const leader = new LeaderElector({ store, lock: 'nightly-job', identity: 'this-host', ...LEASE });
    const standbyStore = new SqliteStore(join(dir, 'lib.db'));
    const standby = new LeaderElector({ store: standbyStore, lock: 'nightly-job', identity: 'other-host', ...LEASE, metadata: { hostname: 'elsewhere' } });
    try {
      leader.start();
      await leader.elected();
      standby.start();
      const stopped = new Promise<StoppedEvent>((r) => leader.once('stopped', r));
      fake.instance(id).lifecycle = 'Terminating:Wait';
      const t0 = performance.now();
      const r = await drainInstance({ store, locks: ['nightly-job', 'not-held'], hook: 'baton-drain', imds: new InstanceMetadata({ endpoint: await fake.metadataEndpoint(id) }) });
      const tookMs = performance.now() - t0;
      t.diagnostic(`drain (step-down, release, CompleteLifecycleAction) took ${tookMs.toFixed(0)} ms; lease ${LEASE.leaseDurationMs} ms`);
      assert.equal(drainExitCode(r), 0);
      assert.deepEqual(r.locks.map((l) => [l.lock, l.outcome]), [['nightly-job', 'released'], ['not-held', 'not-held-here']]);
      assert.deepEqual(await stopped, { term: 1, reason: 'step-down-requested', note: 'instance-leaving' }, 'the holder learns why: this instance is leaving');
      assert.deepEqual(r.lifecycle, { instanceId: id, group: 'drain-lib', hook: 'baton-drain' });
      assert.deepEqual(fake.completed.at(-1), { group: 'drain-lib', hook: 'baton-drain', instanceId: id, result: 'CONTINUE' });
      assert.equal(fake.instance(id).lifecycle, 'Terminating:Proceed');
      assert.ok(tookMs < LEASE.leaseDurationMs / 2, `hand-over took ${tookMs.toFixed(0)} ms, far less than a lease`);
      await standby.elected({ signal: AbortSignal.timeout(10_000) });
    } finally {
      await leader.stop();
      await standby.stop();
      await store.close();
      await standbyStore.close();
    }
  });

  test('a lease held on another host is left alone; the lifecycle action still completes', async () => {
    const id = newInstance('drain-remote');
    const store = new SqliteStore(join(dir, 'remote.db'));
    const remote = new LeaderElector({ store, lock: 'job', identity: 'remote', ...LEASE, metadata: { hostname: `not-${hostname()}` } });
    try {
      remote.start();
      await remote.elected();
      fake.instance(id).lifecycle = 'Terminating:Wait';
      const r = await drainInstance({ store, locks: ['job'], hook: 'baton-drain', imds: new InstanceMetadata({ endpoint: await fake.metadataEndpoint(id) }) });
      assert.equal(drainExitCode(r), 0);
      assert.equal(r.locks[0]!.outcome, 'not-held-here');
      assert.equal(remote.isLeader(), true);
      assert.equal(fake.instance(id).lifecycle, 'Terminating:Proceed');
    } finally {
      await remote.stop();
      await store.close();
    }
  });

  test('a store that cannot be opened fails the hand-over (69) but the lifecycle action still completes', async () => {
    const id = newInstance('drain-store-down');
    fake.instance(id).lifecycle = 'Terminating:Wait';
    const r = await drainInstance({
      store: () => Promise.reject(new StoreUnavailableError('store: connection refused')),
      locks: ['job'],
      hook: 'baton-drain',
      imds: new InstanceMetadata({ endpoint: await fake.metadataEndpoint(id) }),
    });
    assert.equal(drainExitCode(r), 69);
    assert.deepEqual(r.locks, [{ lock: 'job', outcome: 'failed', error: 'store: connection refused' }]);
    assert.equal(fake.instance(id).lifecycle, 'Terminating:Proceed');
  });

  test('no pending lifecycle action: AWS refuses, exit 78, after the hand-over', async () => {
    const id = newInstance('drain-early');
    const r = await drainInstance({ locks: [], hook: 'baton-drain', imds: new InstanceMetadata({ endpoint: await fake.metadataEndpoint(id) }) });
    assert.equal(drainExitCode(r), 78);
    assert.match(r.lifecycleError ?? '', /No active Lifecycle Action/);
  });
});

describe('waitForTermination', () => {
  test('resolves when the target lifecycle state turns Terminated, not on Standby', async () => {
    const id = newInstance('watch-lib');
    const imds = new InstanceMetadata({ endpoint: await fake.metadataEndpoint(id) });
    let done = false;
    const waiting = waitForTermination({ imds, intervalMs: 20 }).then((s) => ((done = true), s));
    fake.instance(id).lifecycle = 'Standby';
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(done, false);
    fake.instance(id).lifecycle = 'Terminating:Wait';
    assert.equal(await waiting, 'Terminated');
  });

  test('an instance in no Auto Scaling group is a configuration error', async () => {
    fake.createGroup('tmp-watch');
    const [id] = fake.launch('tmp-watch', 1);
    fake.instance(id!).group = null;
    const imds = new InstanceMetadata({ endpoint: await fake.metadataEndpoint(id!) });
    await assert.rejects(waitForTermination({ imds, intervalMs: 20 }), AwsRequestError);
  });
});

test('CLI: baton aws watch-termination hands over from a running `baton run` before the instance goes', async () => {
  const id = newInstance('watch-cli');
  const store = `sqlite:${join(dir, 'cli.db')}`;
  const env = { ...(await fake.env(id)), BATON_STORE: store };
  const holder = new BatonChild(['run', '--lock', 'cron', '--lease-duration', '20s', '--renew-deadline', '15s', '--retry-period', '500ms', '--', 'sleep', '600'], env);
  const watcher = new BatonChild(['aws', 'watch-termination', '--lock', 'cron', '--hook', 'baton-drain', '--interval', '100ms', '--timeout', '20s', '--json'], env);
  try {
    await waitFor('baton run to lead', () => /elected leader/.test(holder.stderr));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(watcher.child.exitCode, null, 'the watcher waits while the instance is InService');
    fake.instance(id).lifecycle = 'Terminating:Wait';
    const w = await watcher.done;
    assert.equal(w.code, 0, w.stderr);
    const out = JSON.parse(w.stdout);
    assert.equal(out.locks[0].outcome, 'released');
    assert.equal(out.lifecycle.instanceId, id);
    assert.equal(fake.instance(id).lifecycle, 'Terminating:Proceed');
    const h = await holder.done;
    assert.equal(h.code, 79, 'baton run stopped its command and exited 79 (leaving: a supervisor must not restart it), not 75');
    assert.match(h.stderr, /lost \(step-down-requested: this instance is leaving\)/);
    const status = await runBaton(['is-leader', '--lock', 'cron'], env);
    assert.equal(status.code, 1, 'nobody on this host holds the lock any more');
  } finally {
    await holder.kill();
    await watcher.kill();
  }
});

test('CLI: with --keep-running, an operator\'s step-down (baton release) campaigns again, a drain ends baton run with 79', async () => {
  const store = `sqlite:${join(dir, 'keep.db')}`;
  const env = { ...(await fake.env()), BATON_STORE: store };
  const holder = new BatonChild(['run', '--keep-running', '--lock', 'kept', '--lease-duration', '20s', '--renew-deadline', '15s', '--retry-period', '300ms', '--', 'sleep', '600'], env);
  try {
    await waitFor('baton run to lead', () => /elected leader/.test(holder.stderr));
    const released = await runBaton(['release', '--lock', 'kept'], env);
    assert.equal(released.code, 0, released.stderr);
    await waitFor('baton run to lead again after an ordinary step-down', () => (holder.stderr.match(/elected leader/g) ?? []).length === 2);
    assert.equal(holder.child.exitCode, null);
    const drained = await runBaton(['aws', 'drain', '--lock', 'kept', '--timeout', '20s'], env);
    assert.equal(drained.code, 0, drained.stderr);
    const h = await holder.done;
    assert.equal(h.code, 79, h.stderr);
    assert.equal((h.stderr.match(/elected leader/g) ?? []).length, 2, 'no third campaign on a leaving instance');
  } finally {
    await holder.kill();
  }
});

test('CLI: bad input is refused at once — no --lock or --hook (64), a bad store URL (78)', async () => {
  const r = await runBaton(['aws', 'drain'], await fake.env());
  assert.equal(r.code, 64);
  assert.match(r.stderr, /give --lock NAME/);
  const id = newInstance('watch-bad-store');
  const bad = await runBaton(['aws', 'watch-termination', '--lock', 'x', '--store', 'nosuch://x', '--hook', 'baton-drain'], await fake.env(id));
  assert.equal(bad.code, 78, 'before waiting for a termination that may come hours later');
  assert.match(bad.stderr, /^baton: store: scheme "nosuch:"/);
});
