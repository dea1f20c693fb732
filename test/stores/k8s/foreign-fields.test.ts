/**
 * Fields of a Lease that baton does not own survive its renewals on a real kube-apiserver: the
 * coordinated-leader-election fields client-go's controller writes (spec.strategy,
 * spec.preferredHolder; the API server keeps them with the CoordinatedLeaderElection gate on),
 * labels and annotations an operator set. Someone else's write while baton leads moves the
 * Lease's resourceVersion under baton's feet: the leader must carry on leading with the same
 * term (the holder did not change), not step down, and its next renewals must keep the fields.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { LeaderElector } from '../../../src/core/elector.js';
import { K8sStore } from '../../../src/stores/k8s/index.js';
import { leaseNameOf } from '../../../src/stores/k8s/names.js';
import { KubeApiServer } from '../../../infra/servers/index.js';
import { sleep, waitFor } from '../../harness/wait.js';

const server = await new KubeApiServer().start();
const store = new K8sStore({ url: `${server.url('default')}&request_timeout=2s` });
after(async () => {
  await store.close();
  await server.stop();
});

const TIMING = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };

test('k8s: strategy, preferredHolder, labels and annotations set by others survive baton renewals; the leader keeps leading', async () => {
  const lock = 'foreign-fields';
  const path = `/apis/coordination.k8s.io/v1/namespaces/default/leases/${leaseNameOf(lock)}`;
  const stopped: string[] = [];
  const e = new LeaderElector({ store, lock, identity: 'baton-a', ...TIMING }).on('stopped', ({ reason }) => stopped.push(String(reason)));
  e.start();
  try {
    const { term } = await e.elected();
    const renewedAt = async () => Date.parse((await server.api('GET', path)).body.spec.renewTime as string);
    // Another client merges its fields into the Lease, as kubectl or client-go's controller would.
    const merge = await mergePatch(path, {
      metadata: { labels: { team: 'payments' }, annotations: { 'example.com/owner': 'ops' } },
      spec: { strategy: 'OldestEmulationVersion', preferredHolder: 'baton-b' },
    });
    assert.equal(merge.status, 200, JSON.stringify(merge.body));
    assert.equal(merge.body.spec.strategy, 'OldestEmulationVersion', 'the server keeps spec.strategy (feature gate on)');
    const before = await renewedAt();
    // Several renewals later:
    await waitFor(async () => (await renewedAt()) > before + 3 * TIMING.retryPeriodMs || null, 10_000, 'baton to renew after the foreign write');
    await sleep(3 * TIMING.retryPeriodMs);
    const lease = (await server.api('GET', path)).body;
    assert.equal(lease.spec.holderIdentity, 'baton-a');
    assert.equal(lease.spec.strategy, 'OldestEmulationVersion');
    assert.equal(lease.spec.preferredHolder, 'baton-b');
    assert.equal(lease.metadata.labels?.team, 'payments');
    assert.equal(lease.metadata.annotations?.['example.com/owner'], 'ops');
    assert.ok(e.isLeader(), `the leader kept leading (stopped: ${stopped.join(', ') || 'never'})`);
    assert.deepEqual(stopped, []);
    assert.equal(e.leader()?.term, term, 'with the same term');
  } finally {
    await e.stop();
  }
});

function mergePatch(path: string, body: unknown) {
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    const payload = JSON.stringify(body);
    import('node:https').then(({ default: https }) => {
      const req = https.request(`${server.server}${path}`, {
        method: 'PATCH', ca: server.ca,
        headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/merge-patch+json', 'content-length': String(Buffer.byteLength(payload)) },
      }, (res) => {
        let text = '';
        res.on('data', (b: Buffer) => (text += b.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.end(payload);
    }, reject);
  });
}

test('k8s: spec.preferredHolder naming a live baton candidate moves leadership to it at once, drain-first, with a higher term', async () => {
  const lock = 'preferred-holder';
  const path = `/apis/coordination.k8s.io/v1/namespaces/default/leases/${leaseNameOf(lock)}`;
  const other = new K8sStore({ url: `${server.url('default')}&request_timeout=2s` });
  const a = new LeaderElector({ store, lock, identity: 'baton-a', ...TIMING, candidate: {} });
  const b = new LeaderElector({ store: other, lock, identity: 'baton-b', ...TIMING, candidate: {} });
  const events: string[] = [];
  a.on('stopped', (ev) => events.push(`a stopped ${ev.term} ${ev.reason}`));
  b.on('elected', (ev) => events.push(`b elected ${ev.term}`));
  a.start();
  try {
    const { term } = await a.elected();
    b.start();
    await waitFor(async () => ((await a.candidates()).length === 2 ? true : null), 10_000, 'both candidates registered');
    const merge = await mergePatch(path, { spec: { strategy: 'OldestEmulationVersion', preferredHolder: 'baton-b' } });
    assert.equal(merge.status, 200, JSON.stringify(merge.body));
    const next = await b.elected();
    assert.ok(next.term > term, `term ${next.term} after ${term}`);
    // The handover path, not an expiry: a stopped for 'handover' before b was elected.
    assert.deepEqual(events, [`a stopped ${term} handover`, `b elected ${next.term}`]);
    const lease = (await server.api('GET', path)).body;
    assert.equal(lease.spec.holderIdentity, 'baton-b');
    assert.equal(lease.spec.preferredHolder, 'baton-b', 'the field is left as the operator set it');
  } finally {
    await b.stop();
    await a.stop();
    await other.close();
  }
});
