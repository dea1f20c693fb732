/**
 * What a real kube-apiserver refuses, as baton answers it:
 *
 *   - 429 (too many requests in flight): sent again after the server's Retry-After while the
 *     request timeout allows, and never taken for a lost race. The server here runs with one
 *     request in flight at a time (API Priority and Fairness off, --max-requests-inflight=1,
 *     --max-mutating-requests-inflight=1; the store's user is not in system:masters, which these
 *     limits exempt), and bursts of concurrent writes go at it until the
 *     server's own metric shows that it answered 429s (almost always the first burst).
 *   - 422 (an object the server will not store: holder metadata past the 256 KiB of annotations
 *     a Lease may carry): InvalidConfigError with the server's own words.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { InvalidConfigError, StoreUnavailableError } from '../../../src/core/errors.js';
import { K8sStore } from '../../../src/stores/k8s/index.js';
import { acquireWrite } from '../../../src/testing/conformance/context.js';
import { KubeApiServer } from '../../../infra/servers/index.js';

const server = await new KubeApiServer({
  audit: false,
  extraArgs: ['--enable-priority-and-fairness=false', '--max-requests-inflight=1', '--max-mutating-requests-inflight=1'],
}).start();
// Not the admin: system:masters is exempt from the in-flight limits.
await server.grant('default', { kind: 'User', name: 'alice' }, ['get', 'list', 'watch', 'create', 'update']);
const store = new K8sStore({ url: `k8s://default?kubeconfig=${encodeURIComponent(server.kubeconfigFor('alice', server.userToken('alice')))}&request_timeout=8s` });
after(async () => {
  await store.close();
  await server.stop();
});

/** throttled is how many Lease writes (POST, PUT) the server has answered 429, by its own count. */
async function throttled(): Promise<number> {
  const lines = await server.metricLines('apiserver_request_total{');
  return lines.filter(({ line }) => line.includes('code="429"') && line.includes('resource="leases"') && /verb="(POST|PUT)"/.test(line)).reduce((n, { value }) => n + value, 0);
}

test('k8s: writes answered 429 are sent again after Retry-After and are never a lost race', async () => {
  let burst = 0;
  let ok = 0;
  let unavailable = 0;
  for (; burst < 10; burst++) {
    const results = await Promise.allSettled(Array.from({ length: 24 }, (_, i) => store.write(`throttle-${burst}-${i}`, null, acquireWrite(`c${i}`))));
    for (const r of results) {
      if (r.status === 'fulfilled') {
        // Each lock is new and written once: only success is a right answer.
        assert.equal(r.value.ok, true, `a create of a new Lease answered a lost race: ${JSON.stringify(r.value)}`);
        ok++;
      } else {
        assert.ok(r.reason instanceof StoreUnavailableError, `a throttled write fails only as StoreUnavailableError: ${r.reason}`);
        assert.match(String(r.reason.message), /429/);
        unavailable++;
      }
    }
    if ((await throttled()) > 0) break;
  }
  const n = await throttled();
  process.stdout.write(`# k8s throttling: ${n} answers 429 from the server in ${burst + 1} burst(s); ${ok} writes done, ${unavailable} still throttled after Retry-After\n`);
  assert.ok(n > 0, 'the server never answered 429: the limits did not bite');
  // Without a retry, exactly the writes answered 429 would fail (ok = writes − 429s); with it,
  // some of them were sent again and succeeded.
  assert.ok(ok > ok + unavailable - n, `no write answered 429 succeeded when sent again (${ok} done of ${ok + unavailable}, ${n} answers 429)`);
});

test('k8s: an object the server will not store is one InvalidConfigError with the server\'s words (422)', async () => {
  const huge = { blob: 'x'.repeat(300 * 1024) };
  await assert.rejects(
    store.write('too-big', null, { ...acquireWrite('big'), metadata: huge }),
    (err: Error) => err instanceof InvalidConfigError && /422/.test(err.message) && /annotations/i.test(err.message) && !err.message.includes('\n'),
  );
  assert.equal(await store.read('too-big'), null, 'nothing was stored');
});
