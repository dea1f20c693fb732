/**
 * The k8s store's edges: URL options, lock → Lease names, MicroTime, where the server and the
 * credentials come from (kubeconfig, in-cluster service account, a connection given in code),
 * and the CLI's one-line errors with their exit codes (78 bad configuration, 69 unreachable).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { InvalidConfigError, StoreUnavailableError } from '../../../src/core/errors.js';
import { microTime, parseMicroTime } from '../../../src/stores/k8s/codec.js';
import { parseK8sUrl } from '../../../src/stores/k8s/config.js';
import { resolveConnection } from '../../../src/stores/k8s/kubeconfig.js';
import { isSubdomain, leaseNameOf, termFloorNameOf } from '../../../src/stores/k8s/names.js';
import { K8sStore } from '../../../src/stores/k8s/index.js';
import { acquireWrite } from '../../../src/testing/conformance/context.js';
import { TempDir, cleanEnv, lines, runCli } from '../../harness/cli.js';
import { KubeApiServer } from '../../../infra/servers/index.js';
import { freePort } from '../../../infra/servers/index.js';

describe('k8s config', () => {
  it('parses k8s://NAMESPACE and its options; rejects what it cannot use with one line', () => {
    const t = parseK8sUrl('k8s://team-a?request_timeout=2s&watch_timeout=30&context=prod');
    assert.deepEqual([t.namespace, t.requestTimeoutMs, t.watchTimeoutMs, t.context], ['team-a', 2000, 30_000, 'prod']);
    assert.equal(parseK8sUrl('k8s://').namespace, undefined);
    for (const [bad, names] of [
      ['k8s://Team_A', /namespace "Team_A"/],
      ['k8s://a?frob=1', /unknown URL option "frob"/],
      ['k8s://a:6443', /must be k8s:\/\/NAMESPACE/],
      ['k8s://user:pw@a', /must be k8s:\/\/NAMESPACE/],
      ['k8s://a?request_timeout=soon', /request_timeout/],
      ['k8s://a?watch_timeout=200ms', /watch_timeout/],
    ] as const) {
      assert.throws(() => parseK8sUrl(bad), (e: Error) => e instanceof InvalidConfigError && names.test(e.message) && !e.message.includes('\n'), bad);
    }
  });

  it('maps lock names to Lease names: valid ones as they are, others deterministically to valid, distinct names', () => {
    assert.equal(leaseNameOf('web-cron'), 'web-cron');
    assert.equal(leaseNameOf('a.b.c'), 'a.b.c');
    const odd = ['Jobs/Nightly Report', 'jobs/nightly report', 'UPPER', '-dash', 'baton.term.x', 'x'.repeat(200).toUpperCase(), 'ünïcode ✓', '..', 'a..b'];
    const names = odd.map(leaseNameOf);
    for (const n of names) assert.ok(isSubdomain(n) && n.startsWith('baton.lock.'), n);
    assert.equal(new Set(names).size, names.length, 'distinct');
    assert.deepEqual(odd.map(leaseNameOf), names, 'deterministic');
    assert.match(leaseNameOf('Jobs/Nightly Report'), /^baton\.lock\.jobs-nightly-report-[0-9a-f]{16}$/);
    assert.ok(isSubdomain(termFloorNameOf(leaseNameOf('x'.repeat(200)))));
    assert.ok(isSubdomain(termFloorNameOf('a'.repeat(253))));
  });

  it('writes MicroTime with exactly six fractional digits and reads it back', () => {
    assert.equal(microTime(Date.parse('2026-11-24T05:00:00.123Z')), '2026-11-24T05:00:00.123000Z');
    assert.equal(microTime(Date.parse('2026-11-24T05:00:00Z') + 0.5), '2026-11-24T05:00:00.000500Z');
    assert.equal(parseMicroTime('2026-11-24T05:00:00.123456Z'), Date.parse('2026-11-24T05:00:00.123Z') + 0.456);
    assert.equal(parseMicroTime(null), 0);
  });

  it('kubeconfig: missing file, exec plugins and half a client certificate are one-line InvalidConfigErrors', () => {
    const dir = new TempDir();
    try {
      assert.throws(() => resolveConnection({ env: { HOME: dir.path } }), /no kubeconfig at .*\.kube\/config/);
      const exec = dir.join('exec.json');
      writeFileSync(exec, JSON.stringify({ 'current-context': 'c', contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }], clusters: [{ name: 'k', cluster: { server: 'https://x' } }], users: [{ name: 'u', user: { exec: { command: 'aws' } } }] }));
      assert.throws(() => resolveConnection({ kubeconfig: exec }), /exec plugin, which baton does not run/);
      assert.throws(() => resolveConnection({ kubeconfig: exec, context: 'nope' }), /no context named "nope"/);
      const half = dir.join('half.json');
      writeFileSync(half, JSON.stringify({ 'current-context': 'c', contexts: [{ name: 'c', context: { cluster: 'k', user: 'u', namespace: 'ops' } }], clusters: [{ name: 'k', cluster: { server: 'https://x' } }], users: [{ name: 'u', user: { 'client-certificate-data': 'AAAA' } }] }));
      assert.throws(() => resolveConnection({ kubeconfig: half }), /client certificate without a key/);
      const yaml = dir.join('bad.yaml');
      writeFileSync(yaml, 'apiVersion: v1\n  - : :\n');
      assert.throws(() => resolveConnection({ kubeconfig: yaml }), (e: Error) => e instanceof InvalidConfigError && !e.message.includes('\n'));
    } finally {
      dir.remove();
    }
  });
});

describe('k8s credentials against a real kube-apiserver', () => {
  let server: KubeApiServer;
  const dir = new TempDir();
  before(async () => {
    server = await new KubeApiServer().start();
    await server.ensureNamespace('pod-ns');
    await server.ensureNamespace('byo');
    // The client certificate's user has no rights until bound to a Role, as on any cluster.
    await server.grant('certs', { kind: 'User', name: 'baton-cert' }, ['get', 'list', 'watch', 'create', 'update', 'delete']);
  });
  after(async () => {
    await server.stop();
    dir.remove();
  });

  it('in a Pod: KUBERNETES_SERVICE_HOST/PORT and the service account files (namespace included)', async () => {
    const sa = dir.join('sa');
    mkdirSync(sa);
    writeFileSync(dir.join('sa', 'token'), `${server.token}\n`);
    writeFileSync(dir.join('sa', 'ca.crt'), server.ca);
    writeFileSync(dir.join('sa', 'namespace'), 'pod-ns');
    const store = new K8sStore({ env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(server.port) }, serviceAccountDir: sa });
    try {
      assert.equal(store.namespace, 'pod-ns');
      assert.ok((await store.write('in-pod', null, acquireWrite('pod-a'))).ok);
      assert.equal((await store.read('in-pod'))?.holder, 'pod-a');
    } finally {
      await store.close();
    }
  });

  it('a connection given in code (bring your own): server, CA and token', async () => {
    const store = new K8sStore({ connection: { server: server.server, ca: server.ca, token: server.token }, namespace: 'byo' });
    try {
      assert.ok((await store.write('byo', null, acquireWrite('me'))).ok);
      assert.equal((await store.read('byo'))?.holder, 'me');
    } finally {
      await store.close();
    }
  });

  it('a kubeconfig (JSON) whose user has a client certificate and key as files: mutual TLS, namespace from the context', async () => {
    const store = new K8sStore({ url: `k8s://?kubeconfig=${encodeURIComponent(server.kubeconfigWithCert)}` });
    try {
      assert.equal(store.namespace, 'certs');
      await store.verify();
      assert.ok((await store.write('by-cert', null, acquireWrite('cert-holder'))).ok);
      assert.equal((await store.read('by-cert'))?.holder, 'cert-holder');
    } finally {
      await store.close();
    }
  });

  it('a wrong token is an InvalidConfigError naming the 401; a closed port is StoreUnavailableError', async () => {
    const wrong = new K8sStore({ connection: { server: server.server, ca: server.ca, token: 'wrong' } });
    await assert.rejects(wrong.verify(), (e: Error) => e instanceof InvalidConfigError && /401/.test(e.message));
    await wrong.close();
    const closed = new K8sStore({ connection: { server: `https://127.0.0.1:${await freePort()}`, ca: server.ca, token: 't' } });
    await assert.rejects(closed.read('x'), (e: Error) => e instanceof StoreUnavailableError && /ECONNREFUSED/.test(e.message));
    await closed.close();
  });

  it('CLI: one line and exit 78 for bad configuration, 69 for an unreachable server, 0 with a good kubeconfig', async () => {
    const env = cleanEnv(dir.path);
    const badToken = dir.join('bad-token.yaml');
    writeFileSync(badToken, (await import('node:fs')).readFileSync(server.kubeconfig, 'utf8').replace(server.token, 'nope'));
    const closedPort = dir.join('closed.yaml');
    writeFileSync(closedPort, (await import('node:fs')).readFileSync(server.kubeconfig, 'utf8').replace(`:${new URL(server.server).port}`, `:${await freePort()}`));
    const cases: [string[], NodeJS.ProcessEnv, number, RegExp][] = [
      [['status', '--store', 'k8s://Bad_NS', '--lock', 'x'], {}, 78, /namespace "Bad_NS"/],
      [['status', '--store', 'k8s://default', '--lock', 'x'], { KUBECONFIG: dir.join('missing') }, 78, /no kubeconfig at/],
      [['status', '--store', 'k8s://default', '--lock', 'x'], { KUBECONFIG: badToken }, 78, /401/],
      [['status', '--store', 'k8s://default', '--lock', 'x'], { KUBECONFIG: closedPort }, 69, /ECONNREFUSED/],
    ];
    for (const [args, extra, code, names] of cases) {
      const r = await runCli(args, { env: { ...env, ...extra } });
      assert.equal(r.code, code, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(lines(r.stderr).length, 1, r.stderr);
      assert.match(r.stderr, /^baton: /);
      assert.match(r.stderr, names);
    }
    const ok = await runCli(['status', '--store', 'k8s://default', '--lock', 'in-pod', '--json'], { env: { ...env, KUBECONFIG: server.kubeconfig } });
    assert.equal(ok.code, 0, ok.stderr);
  });
});
