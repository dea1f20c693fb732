/**
 * baton and kubectl on one API server: kubectl (built with the API server by infra/kube/build.sh)
 * talks to it through the same kubeconfig baton uses, and what one writes the other reads. Run
 * against the real kube-apiserver — the truth — and against the fake (infra/fakes/k8s-api.ts),
 * whose fidelity this checks: every expectation holds on both. The fake serves no OpenAPI
 * document, so kubectl's client-side validation is off (--validate=false) on both; the
 * server-side checks are the server's own.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { K8sStore } from '../../../src/stores/k8s/index.js';
import { acquireWrite, keepWrite, waitFor } from '../../../src/testing/conformance/context.js';
import { K8sFakeServer, KubeApiServer } from '../../../infra/servers/index.js';
import { kubeBinary } from '../../../infra/kube/binaries.js';

const kubectlPath = kubeBinary('kubectl');

for (const target of ['real', 'fake'] as const)
describe(`k8s (${target} API server) and kubectl`, () => {
  let server: K8sFakeServer | KubeApiServer;
  let store: K8sStore;
  let dir: string;
  before(async () => {
    server = await (target === 'real' ? new KubeApiServer() : new K8sFakeServer()).start();
    store = new K8sStore({ url: server.url() });
    dir = mkdtempSync(join(tmpdir(), 'baton-kubectl-'));
  });
  after(async () => {
    await store?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  // Never synchronously: the real server's proxy lives on this process's event loop.
  const kubectl = (...args: string[]) =>
    new Promise<{ code: number; out: string; err: string }>((resolve) => {
      execFile(kubectlPath, ['--kubeconfig', server.kubeconfig, '-n', 'default', ...args], { encoding: 'utf8', env: { ...process.env, HOME: dir }, timeout: 30_000 }, (err, out, errText) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, out, err: errText });
      });
    });
  const file = (name: string, obj: unknown) => {
    const p = join(dir, name);
    writeFileSync(p, JSON.stringify(obj));
    return p;
  };
  const lease = (name: string, spec: Record<string, unknown>, metadata: Record<string, unknown> = {}) => ({
    apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, ...metadata }, spec,
  });

  it('kubectl get reads what baton wrote: client-go field types, MicroTime with six digits, term in an annotation', async () => {
    const r = await store.write('kc-read', null, acquireWrite('baton-a', 2500));
    assert.ok(r.ok);
    const got = await kubectl('get', 'lease', 'kc-read', '-o', 'json');
    assert.equal(got.code, 0, got.err);
    const obj = JSON.parse(got.out);
    assert.equal(obj.kind, 'Lease');
    assert.equal(obj.spec.holderIdentity, 'baton-a');
    assert.equal(obj.spec.leaseDurationSeconds, 3, '2.5 s rounds up to 3 whole seconds');
    assert.match(obj.spec.renewTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.match(obj.spec.acquireTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.equal(obj.metadata.annotations['baton.dev/term'], String(r.record.term));
    assert.equal(obj.metadata.resourceVersion, r.record.revision);
  });

  it('baton reads what kubectl created (a client-go-style Lease without annotations)', async () => {
    const made = await kubectl('create', '--validate=false', '-f', file('c.json', lease('kc-created', { holderIdentity: 'kubectl-holder', leaseDurationSeconds: 15, acquireTime: '2026-11-24T05:00:00.000000Z', renewTime: '2026-11-24T05:00:01.500000Z', leaseTransitions: 4 })));
    assert.equal(made.code, 0, made.err);
    const rec = await store.read('kc-created');
    assert.equal(rec?.holder, 'kubectl-holder');
    assert.equal(rec?.leaseDurationMs, 15_000);
    assert.equal(rec?.transitions, 4);
    assert.equal(rec?.renewedAt, Date.parse('2026-11-24T05:00:01.500Z'));
    const again = await kubectl('create', '--validate=false', '-f', file('c.json', lease('kc-created', { holderIdentity: 'x' })));
    assert.notEqual(again.code, 0);
    assert.match(again.err, /AlreadyExists|already exists/);
  });

  it('kubectl replace with a stale resourceVersion is a conflict; with the current one it succeeds and baton sees a new revision', async () => {
    const r = await store.write('kc-replace', null, acquireWrite('baton-b'));
    assert.ok(r.ok);
    const renewed = await store.write('kc-replace', r.record.revision, keepWrite('baton-b'));
    assert.ok(renewed.ok);
    const stale = await kubectl('replace', '--validate=false', '-f', file('s.json', lease('kc-replace', { holderIdentity: 'intruder', leaseDurationSeconds: 5 }, { resourceVersion: r.record.revision })));
    assert.notEqual(stale.code, 0);
    assert.match(stale.err, /Conflict|the object has been modified/);
    assert.equal((await store.read('kc-replace'))?.holder, 'baton-b');
    const fresh = await kubectl('replace', '--validate=false', '-f', file('f.json', lease('kc-replace', { holderIdentity: '', leaseDurationSeconds: 1 }, { resourceVersion: renewed.record.revision })));
    assert.equal(fresh.code, 0, fresh.err);
    const now = await store.read('kc-replace');
    assert.equal(now?.holder, null, 'an empty holderIdentity reads as released');
    assert.notEqual(now?.revision, renewed.record.revision);
  });

  it('the server rejects what the real one rejects: a MicroTime without six digits, a fractional duration, a bad name', async () => {
    const millis = await kubectl('create', '--validate=false', '-f', file('m.json', lease('kc-bad-time', { renewTime: '2026-11-24T05:00:00.123Z' })));
    assert.notEqual(millis.code, 0);
    assert.match(millis.err, /parsing time|BadRequest/);
    const fraction = await kubectl('create', '--validate=false', '-f', file('d.json', lease('kc-bad-duration', { leaseDurationSeconds: 1.5 })));
    assert.notEqual(fraction.code, 0);
    assert.match(fraction.err, /cannot unmarshal number 1.5/);
    const name = await kubectl('create', '--validate=false', '-f', file('n.json', lease('Bad_Name', {})));
    assert.notEqual(name.code, 0);
    assert.match(name.err, /RFC 1123|invalid/i);
    assert.equal((await kubectl('get', 'lease', 'kc-bad-time')).code, 1, 'nothing was created');
  });

  it('kubectl delete removes the Lease; baton then sees no record, and its next term still grows (the floor Lease survives)', async () => {
    const first = await store.write('kc-delete', null, acquireWrite('baton-c'));
    assert.ok(first.ok);
    const del = await kubectl('delete', 'lease', 'kc-delete');
    assert.equal(del.code, 0, del.err);
    assert.equal(await store.read('kc-delete'), null);
    const floor = await kubectl('get', 'lease', 'baton.term.kc-delete', '-o', 'json');
    assert.equal(floor.code, 0, floor.err);
    assert.equal(JSON.parse(floor.out).metadata.annotations['baton.dev/term'], String(first.record.term));
    const second = await store.write('kc-delete', null, acquireWrite('baton-d'));
    assert.ok(second.ok);
    assert.ok(second.record.term > first.record.term, `term ${second.record.term} after ${first.record.term}`);
  });

  it('DELETE as the real server answers it: a Success Status, NotFound when missing, preconditions that fail are a 409 Conflict', async () => {
    const r = await store.write('kc-del-api', null, acquireWrite('baton-e'));
    assert.ok(r.ok);
    const obj = JSON.parse((await kubectl('get', 'lease', 'kc-del-api', '-o', 'json')).out);
    const path = (n: string) => ['default', n] as const;
    const staleRv = await server.deleteLease(...path('kc-del-api'), { resourceVersion: String(Number(r.record.revision) - 1) });
    assert.equal(staleRv.status, 409);
    assert.deepEqual([staleRv.body.kind, staleRv.body.status, staleRv.body.reason, staleRv.body.code], ['Status', 'Failure', 'Conflict', 409]);
    assert.match(staleRv.body.message, /^Operation cannot be fulfilled on Lease\.coordination\.k8s\.io "kc-del-api": the ResourceVersion in the precondition \(\d+\) does not match the ResourceVersion in record \(\d+\)\. The object might have been modified$/);
    const otherUid = await server.deleteLease(...path('kc-del-api'), { uid: '00000000-0000-0000-0000-000000000000', resourceVersion: r.record.revision });
    assert.equal(otherUid.status, 409);
    assert.match(otherUid.body.message, /: the UID in the precondition \(0{8}-0{4}-0{4}-0{4}-0{12}\) does not match the UID in record/);
    assert.equal((await store.read('kc-del-api'))?.revision, r.record.revision, 'a failed precondition deletes nothing');
    const done = await server.deleteLease(...path('kc-del-api'), { uid: obj.metadata.uid, resourceVersion: r.record.revision });
    assert.equal(done.status, 200);
    assert.deepEqual(done.body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name: 'kc-del-api', group: 'coordination.k8s.io', kind: 'leases', uid: obj.metadata.uid } });
    const again = await server.deleteLease(...path('kc-del-api'));
    assert.equal(again.status, 404);
    assert.deepEqual([again.body.reason, again.body.code, again.body.message], ['NotFound', 404, 'leases.coordination.k8s.io "kc-del-api" not found']);
    const missing = await kubectl('delete', 'lease', 'kc-del-api');
    assert.notEqual(missing.code, 0);
    assert.match(missing.err, /NotFound.*leases\.coordination\.k8s\.io "kc-del-api" not found/);
  });

  it('a watch from kubectl sees kubectl delete as a DELETED event at a newer resourceVersion; the next write is newer still', async () => {
    const r = await store.write('kc-del-watch', null, acquireWrite('baton-f'));
    assert.ok(r.ok);
    const child = spawn(kubectlPath, ['--kubeconfig', server.kubeconfig, '-n', 'default', 'get', 'lease', 'kc-del-watch', '-w', '--output-watch-events', '-o', 'json'], { env: { ...process.env, HOME: dir } });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    try {
      // With --output-watch-events kubectl prints one compact JSON event per line.
      await waitFor(() => out.includes(`"resourceVersion":"${r.record.revision}"`), 10_000, 'kubectl to print the Lease');
      const del = await kubectl('delete', 'lease', 'kc-del-watch');
      assert.equal(del.code, 0, del.err);
      assert.match(del.out, /lease\.coordination\.k8s\.io "kc-del-watch" deleted/);
      await waitFor(() => /"type":"DELETED".*\n/.test(out), 10_000, 'kubectl to print the deletion');
      const events = out.trim().split('\n').map((t) => JSON.parse(t) as { type: string; object: { metadata: { resourceVersion: string } } });
      const deleted = events.find((e) => e.type === 'DELETED')!;
      const deletedRv = Number(deleted.object.metadata.resourceVersion);
      assert.ok(deletedRv > Number(r.record.revision), `DELETED at ${deletedRv}, after ${r.record.revision}`);
      const next = await store.write('kc-del-watch', null, acquireWrite('baton-g'));
      assert.ok(next.ok);
      assert.ok(Number(next.record.revision) > deletedRv, 'one global resourceVersion, still growing');
      assert.ok(next.record.term > r.record.term);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('a watch from kubectl (get -w) sees a baton renewal as it happens', async () => {
    const r = await store.write('kc-watch', null, acquireWrite('baton-w'));
    assert.ok(r.ok);
    const child = spawn(kubectlPath, ['--kubeconfig', server.kubeconfig, '-n', 'default', 'get', 'lease', 'kc-watch', '-w', '-o', 'json'], { env: { ...process.env, HOME: dir } });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    try {
      await waitFor(() => out.includes(`"resourceVersion": "${r.record.revision}"`), 10_000, 'kubectl to print the Lease');
      const renewed = await store.write('kc-watch', r.record.revision, keepWrite('baton-w'));
      assert.ok(renewed.ok);
      await waitFor(() => out.includes(`"resourceVersion": "${renewed.record.revision}"`), 10_000, 'kubectl to print the renewal');
    } finally {
      child.kill('SIGKILL');
    }
  });
});
