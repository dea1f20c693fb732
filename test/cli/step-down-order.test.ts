/**
 * A leader asked to step down (`baton release`, the sidecar's /step-down, `baton aws drain`)
 * stops its work before the lease is released: a standby's command may start only after the
 * old command has exited. The old command here takes its time to shut down (a second after
 * SIGTERM, as a worker finishing a batch would), and the standby is ready and watching.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { BatonProcess, SLOW_CHILD, TempDir, cleanEnv, readChildLog, runCli, waitFor } from '../harness/cli.js';

const dir = new TempDir();
const started: BatonProcess[] = [];
after(async () => {
  await Promise.all(started.map((b) => b.kill()));
  dir.remove();
});


test("baton release: the leader's command has exited before the standby's starts", async () => {
  const store = `sqlite:${dir.join('order.db')}`;
  const log = dir.join('order.log');
  const env = cleanEnv(dir.path, { CHILD_LOG: log, STOP_DELAY_MS: '1000' });
  // A lease long enough that nothing expires: only the release can hand over.
  const timing = ['--lease-duration', '20s', '--renew-deadline', '15s', '--retry-period', '200ms'];
  const run = (id: string) => {
    const b = new BatonProcess(['run', '--store', store, '--lock', 'order', '--identity', id, ...timing, '--', process.execPath, '-e', SLOW_CHILD], { env });
    started.push(b);
    return b;
  };
  run('a');
  await waitFor('a to start its command', () => readChildLog(log).find((l) => l.kind === 'start'), 15_000);
  run('b');
  await new Promise((r) => setTimeout(r, 1500)); // b is campaigning and watching
  const released = await runCli(['release', '--store', store, '--lock', 'order', '--timeout', '15s'], { env });
  assert.equal(released.code, 0, released.stderr);
  const second = await waitFor('b to start its command', () => readChildLog(log).filter((l) => l.kind === 'start')[1], 20_000);
  const stopA = readChildLog(log).find((l) => l.kind === 'stop' && l.identity === 'a');
  assert.ok(stopA, `a's command logged its stop:\n${readChildLog(log).map((l) => `${l.kind} ${l.identity}`).join('\n')}`);
  assert.equal(second.identity, 'b');
  assert.ok(second.monoNs > stopA.monoNs, `b started ${Number(stopA.monoNs - second.monoNs) / 1e6} ms before a's command had stopped`);
});
