/**
 * Least privilege and the examples, on a real kube-apiserver with RBAC on:
 *
 *   - every manifest in examples/k8s is accepted by the server (`kubectl apply --dry-run=server`,
 *     admission and validation included) after the walk-through's `kubectl create namespace`;
 *   - baton, given only a service-account token (TokenRequest, as a Pod's projected token) bound
 *     to the Role of examples/k8s/rbac.yaml, runs the three-process failover scenario;
 *   - a Role missing one verb baton needs gets one line naming the verb and exit 78, promptly —
 *     never a hang or a stack trace.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { KubeApiServer } from '../../../infra/servers/index.js';
import { runThreeCandidateScenario } from '../../harness/run-scenario.js';
import { TempDir, childCommand, cleanEnv, lines, runCli } from '../../harness/cli.js';

const EXAMPLES = fileURLToPath(new URL('../../../examples/k8s/', import.meta.url));
const server = await new KubeApiServer().start();
const dir = new TempDir();
after(async () => {
  await server.stop();
  dir.remove();
});

/** tokenFor asks the API server for a service account's token, as a Pod's projected token is issued. */
async function tokenFor(namespace: string, account: string): Promise<string> {
  const r = await server.kubectl(['create', 'token', account, '-n', namespace, '--duration', '1h']);
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

describe('examples/k8s on a real API server', () => {
  before(async () => {
    const ns = await server.kubectl(['create', 'namespace', 'jobs']);
    assert.equal(ns.status, 0, ns.stderr);
  });

  it('every manifest passes a server-side dry run', async () => {
    const manifests = readdirSync(EXAMPLES).filter((f) => /\.ya?ml$/.test(f)).sort();
    assert.ok(manifests.includes('rbac.yaml') && manifests.includes('deployment.yaml'), manifests.join(', '));
    // rbac.yaml first: the Deployments name its ServiceAccount.
    for (const f of ['rbac.yaml', ...manifests.filter((m) => m !== 'rbac.yaml')]) {
      const r = await server.kubectl(['apply', '--dry-run=server', '-f', `${EXAMPLES}${f}`]);
      assert.equal(r.status, 0, `${f}: ${r.stderr}`);
      assert.match(r.stdout, /\(server dry run\)/, `${f}: ${r.stdout}`);
    }
  });

  it('baton with only the example Role: three baton run processes fail over and hand over', async () => {
    const applied = await server.kubectl(['apply', '-f', `${EXAMPLES}rbac.yaml`]);
    assert.equal(applied.status, 0, applied.stderr);
    const kubeconfig = server.kubeconfigFor('report-worker', await tokenFor('jobs', 'report-worker'), 'jobs');
    // The example's Role allows no delete and nothing outside its namespace: make sure of it.
    const can = await server.kubectl(['auth', 'can-i', 'delete', 'leases', '-n', 'jobs'], { kubeconfig });
    assert.equal(can.stdout.trim(), 'no');
    const before = process.env.KUBECONFIG;
    process.env.KUBECONFIG = kubeconfig;
    try {
      const r = await runThreeCandidateScenario({ storeUrl: 'k8s://', name: 'k8s-rbac' });
      assert.equal(new Set(r.terms).size, r.terms.length, 'every leadership has its own term');
    } finally {
      if (before === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = before;
    }
  });
});

describe('a Role missing a verb baton needs', () => {
  const all = ['get', 'list', 'watch', 'create', 'update'] as const;
  for (const missing of ['get', 'watch', 'create', 'update'] as const) {
    it(`without ${missing}: baton run says so in one line and exits 78`, async () => {
      const ns = `rbac-no-${missing}`;
      await server.ensureNamespace(ns);
      await server.apply(JSON.stringify({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'worker', namespace: ns } }));
      await server.grant(ns, { kind: 'ServiceAccount', name: 'worker' }, all.filter((v) => v !== missing));
      const kubeconfig = server.kubeconfigFor(`worker-${missing}`, await tokenFor(ns, 'worker'), ns);
      const started = performance.now();
      const r = await runCli(['run', '--store', 'k8s://', '--lock', 'job', '--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms', '--', ...childCommand()], {
        env: cleanEnv(dir.path, { KUBECONFIG: kubeconfig, CHILD_LOG: dir.join(`child-${missing}.log`) }),
        timeoutMs: 30_000,
      });
      const tookMs = performance.now() - started;
      assert.equal(r.code, 78, `exit ${r.code} (${r.signal ?? ''}) after ${tookMs.toFixed(0)} ms:\n${r.stderr}`);
      // Without update it was elected (a create) and said so, then lost the lease at its first
      // renewal: those lines come first; the error is the last line, and the only one otherwise.
      const said = lines(r.stderr);
      if (missing !== 'update') assert.equal(said.length, 1, r.stderr);
      else assert.match(said[0]!, /elected leader of "job"/);
      const error = said.at(-1)!;
      assert.match(error, /^baton: /);
      assert.match(error, new RegExp(`cannot ${missing} resource "leases"`), r.stderr);
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    });
  }
});
