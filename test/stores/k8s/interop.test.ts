/**
 * Interop: baton candidates (`baton run` processes on the k8s store) and client-go's own elector
 * (test/stores/k8s/client-go-elector: k8s.io/client-go/tools/leaderelection with
 * resourcelock.LeaseLock, built from the module by infra/kube/build.sh) contend for ONE Lease on a
 * real kube-apiserver. Leadership crosses both ways, by kill -9 (the next leader waits out the
 * lease), by SIGTERM with ReleaseOnCancel (the leader releases with an empty holder and the next
 * one takes over at once) and by SIGTERM without it (client-go leaves the Lease to expire):
 *
 *   client-go ─kill -9→ baton ─SIGTERM→ client-go ─SIGTERM→ baton ─kill -9→ client-go ─SIGTERM→ baton
 *   ─SIGTERM→ client-go (no ReleaseOnCancel) ─SIGTERM→ baton
 *
 * Every leader logs start/stop lines to one file with CLOCK_MONOTONIC stamps; no two leaderships
 * may overlap, baton's terms only grow, and leaseTransitions counts every change of holder.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { K8sStore } from '../../../src/stores/k8s/index.js';
import { BatonProcess, TempDir, childCommand, cleanEnv, delay, monoNs, pidAlive, readChildLog, waitFor, type LogLine } from '../../harness/cli.js';
import { KubeApiServer } from '../../../infra/servers/index.js';
import { kubeBinary } from '../../../infra/kube/binaries.js';

const server = await new KubeApiServer().start();
after(() => server.stop());

const TIMING = { leaseMs: 2000, renewDeadlineMs: 1400, retryMs: 200 };
const CLIENT_GO = kubeBinary('leader-elector');

test('k8s interop: client-go and baton candidates share one Lease; leadership crosses both ways under kill -9 and SIGTERM, never overlapping', async () => {
  const lease = `interop-${process.pid}`;
  const dir = new TempDir();
  const log = dir.join('leaders.log');
  const env = cleanEnv(dir.path, { KUBECONFIG: server.kubeconfig, CHILD_LOG: log, CHILD_STOP_CODE: '0' });
  const caFile = dir.join('ca.crt');
  (await import('node:fs')).writeFileSync(caFile, server.ca);
  const procs: { kill(): void }[] = [];
  const gone = new Map<number, bigint>();
  const starts = () => readChildLog(log).filter((l) => l.kind === 'start');
  const context = () => `\nlog:\n${readChildLog(log).map((l) => `${l.kind} ${l.term} ${l.pid} ${l.identity}`).join('\n')}`;

  const baton = (id: string) => {
    const p = new BatonProcess(['run', '--store', 'k8s://default', '--lock', lease, '--identity', id,
      '--lease-duration', `${TIMING.leaseMs}ms`, '--renew-deadline', `${TIMING.renewDeadlineMs}ms`, '--retry-period', `${TIMING.retryMs}ms`,
      '--', ...childCommand()], { env });
    procs.push({ kill: () => void p.kill() });
    return p;
  };
  const clientGo = (id: string, releaseOnCancel = true): ChildProcess => {
    const child = spawn(CLIENT_GO, [], {
      env: { ...env, K8S_SERVER: server.server, K8S_CA: caFile, K8S_TOKEN: server.token, K8S_NAMESPACE: 'default', LEASE: lease, IDENTITY: id,
        LEASE_MS: String(TIMING.leaseMs), RENEW_DEADLINE_MS: String(TIMING.renewDeadlineMs), RETRY_MS: String(TIMING.retryMs), RELEASE_ON_CANCEL: String(releaseOnCancel) },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('exit', () => gone.set(child.pid!, monoNs()));
    procs.push({ kill: () => child.exitCode === null && child.kill('SIGKILL') });
    return child;
  };
  const nextStart = (n: number, who: string) => waitFor(`leadership ${n} (${who})${context()}`, () => starts()[n - 1], 15_000);
  const exited = (c: ChildProcess) => (c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise((r) => c.once('exit', r)));

  try {
    // 1. A client-go candidate creates the Lease and leads; a baton standby waits.
    const g1 = clientGo('go-1');
    const first = await nextStart(1, 'go-1');
    assert.equal(first.identity, 'go-1');
    const b1 = baton('baton-1');
    await delay(1500);
    assert.equal(starts().length, 1, `baton must not take a live client-go lease${context()}`);

    // 2. kill -9 the client-go leader: baton takes over once the lease is over (client-go → baton).
    const killedAt = monoNs();
    g1.kill('SIGKILL');
    await exited(g1);
    const second = await nextStart(2, 'baton-1 after go-1 was killed');
    assert.equal(second.identity, 'baton-1');
    assert.ok(second.term > 0);
    assert.ok(Number(second.monoNs - killedAt) / 1e6 >= TIMING.leaseMs - TIMING.retryMs, 'baton waited out the lease');

    // 3. SIGTERM the baton leader: it releases ("" holder), a client-go standby takes over (baton → client-go).
    const g2 = clientGo('go-2');
    await delay(1000);
    const termAt = monoNs();
    b1.signal('SIGTERM');
    const third = await nextStart(3, 'go-2 after baton-1 released');
    assert.equal(third.identity, 'go-2');
    assert.ok(readChildLog(log).some((l) => l.kind === 'stop' && l.identity === 'baton-1'), 'baton-1 stopped its child');
    assert.ok(Number(third.monoNs - termAt) / 1e6 < TIMING.leaseMs, `client-go took a released Lease at once${context()}`);
    await b1.waitForExit(5_000);

    // 4. SIGTERM the client-go leader (ReleaseOnCancel): a baton standby takes over at once (client-go → baton).
    const b2 = baton('baton-2');
    await delay(1000);
    const term2At = monoNs();
    g2.kill('SIGTERM');
    const fourth = await nextStart(4, 'baton-2 after go-2 released');
    assert.equal(fourth.identity, 'baton-2');
    assert.ok(fourth.term > second.term, `baton terms only grow: ${second.term} then ${fourth.term}`);
    assert.ok(Number(fourth.monoNs - term2At) / 1e6 < TIMING.leaseMs, `baton took a released Lease at once${context()}`);
    await exited(g2);

    // 5. kill -9 the baton leader (its child dies with it): client-go takes over after the lease (baton → client-go).
    const g3 = clientGo('go-3');
    await delay(1000);
    b2.signal('SIGKILL');
    await b2.waitForExit(5_000);
    await waitFor('baton-2\'s child to die with it', () => !pidAlive(fourth.pid), 3_000);
    gone.set(fourth.pid, monoNs());
    const fifth = await nextStart(5, 'go-3 after baton-2 was killed');
    assert.equal(fifth.identity, 'go-3');

    // 6. SIGTERM client-go again: the last baton takes over at once, with a higher term than any before.
    const b3 = baton('baton-3');
    await delay(1000);
    g3.kill('SIGTERM');
    const sixth = await nextStart(6, 'baton-3 after go-3 released');
    assert.equal(sixth.identity, 'baton-3');
    assert.ok(sixth.term > fourth.term, `baton terms only grow: ${fourth.term} then ${sixth.term}`);
    await exited(g3);

    // 7. SIGTERM baton: a client-go candidate without ReleaseOnCancel takes over at once (baton released).
    const g4 = clientGo('go-4', false);
    await delay(1000);
    b3.signal('SIGTERM');
    const seventh = await nextStart(7, 'go-4 after baton-3 released');
    assert.equal(seventh.identity, 'go-4');
    await b3.waitForExit(5_000);

    // 8. SIGTERM that client-go: it stops its work and leaves the Lease held, so baton waits out the lease.
    const b4 = baton('baton-4');
    await delay(1000);
    const term4At = monoNs();
    g4.kill('SIGTERM');
    await exited(g4);
    const eighth = await nextStart(8, 'baton-4 after go-4 left without releasing');
    assert.equal(eighth.identity, 'baton-4');
    assert.ok(Number(eighth.monoNs - term4At) / 1e6 >= TIMING.leaseMs - TIMING.retryMs, `baton waited out a Lease that was not released${context()}`);
    assert.ok(eighth.term > sixth.term, `baton terms only grow: ${sixth.term} then ${eighth.term}`);

    // 9. The Lease agrees: baton-4 holds it, and leaseTransitions counted the seven changes of holder.
    const store = new K8sStore({ url: server.url() });
    try {
      const rec = await store.read(lease);
      assert.equal(rec?.holder, 'baton-4');
      assert.equal(rec?.term, eighth.term);
      assert.equal(rec?.transitions, 7, 'go-1 created it (0); seven acquisitions by another holder since');
    } finally {
      await store.close();
    }
    assertNoOverlap(readChildLog(log), gone);
    b4.signal('SIGTERM');
    await b4.waitForExit(5_000);
  } finally {
    for (const p of procs) p.kill();
    await delay(100);
    for (const l of readChildLog(log)) if (l.pid && pidAlive(l.pid)) {
      try {
        process.kill(l.pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    dir.remove();
  }
});

/** assertNoOverlap: each leadership starts after the previous one ended (its stop line, else when it was seen gone). */
function assertNoOverlap(log: LogLine[], goneAt: Map<number, bigint>): void {
  const starts = log.filter((l) => l.kind === 'start').sort((a, b) => (a.monoNs < b.monoNs ? -1 : 1));
  for (let i = 1; i < starts.length; i++) {
    const prev = starts[i - 1]!;
    const end = log.find((l) => l.kind === 'stop' && l.pid === prev.pid)?.monoNs ?? goneAt.get(prev.pid);
    assert.ok(end !== undefined, `leadership of ${prev.identity} (pid ${prev.pid}) has no known end`);
    assert.ok(starts[i]!.monoNs > end, `${starts[i]!.identity} started while ${prev.identity} still led`);
  }
}
