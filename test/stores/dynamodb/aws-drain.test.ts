/**
 * `baton aws watch-termination` with a dynamodb:// store: a real `baton run` holds a lease in a
 * real dynalite table; Auto Scaling and instance metadata are AwsFake (test/harness/aws-fake.ts,
 * a stateful fake of their wire protocols — no AWS emulator can run here). The endpoint comes
 * from AWS_ENDPOINT_URL_DYNAMODB (the SDK's standard variable); the watcher has no AWS_REGION,
 * so its store's SDK client takes the instance's region from instance metadata (the last step of
 * the SDK's region resolution), as the lifecycle action does.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { AwsFake } from '../../harness/aws-fake.js';
import { BatonChild, runBaton, waitFor } from '../../aws/helpers.js';
import { startDynalite } from './servers.js';

const server = await startDynalite();
let fake: AwsFake;
before(async () => {
  fake = await AwsFake.start();
});
after(() => fake.stop());

test('CLI: watch-termination hands over a dynamodb lease from a running `baton run`, region from instance metadata', async () => {
  fake.createGroup('dynamo-watch', { hooks: ['baton-drain'] });
  const id = fake.launch('dynamo-watch', 1)[0]!;
  const env: NodeJS.ProcessEnv = { ...(await fake.env(id)), AWS_ENDPOINT_URL_DYNAMODB: server.endpoint, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', BATON_STORE: 'dynamodb://baton-drain' };
  assert.equal(env.AWS_REGION, undefined);
  const holder = new BatonChild(['run', '--lock', 'cron', '--lease-duration', '20s', '--renew-deadline', '15s', '--retry-period', '500ms', '--', 'sleep', '600'], { ...env, AWS_REGION: fake.region });
  const watcher = new BatonChild(['aws', 'watch-termination', '--lock', 'cron', '--hook', 'baton-drain', '--interval', '100ms', '--timeout', '20s', '--json'], env);
  try {
    await waitFor('baton run to lead', () => /elected leader/.test(holder.stderr));
    fake.instance(id).lifecycle = 'Terminating:Wait';
    const w = await watcher.done;
    assert.equal(w.code, 0, w.stderr);
    const out = JSON.parse(w.stdout);
    assert.equal(out.locks[0].outcome, 'released');
    assert.equal(fake.instance(id).lifecycle, 'Terminating:Proceed');
    const h = await holder.done;
    assert.equal(h.code, 79, 'baton run stopped its command and exited 79 (leaving: do not restart)');
    const status = await runBaton(['status', '--lock', 'cron', '--json'], { ...env, AWS_REGION: fake.region });
    assert.equal(status.code, 0, status.stderr);
    const record = JSON.parse(status.stdout) as { holder: string | null; term: number };
    assert.ok(record.term >= 1, 'the lease was taken in this table');
    assert.equal(record.holder, null, 'the lease was released');
  } finally {
    await holder.kill();
    await watcher.kill();
  }
});
