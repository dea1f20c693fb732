/**
 * The Helm chart (charts/baton), by a real helm built from its Go module (infra/helm/build.sh),
 * against the real kube-apiserver of the k8s store's tests:
 *
 *   - `helm lint --strict` passes for both forms (run, sidecar); a mode that is neither fails the
 *     render with a message naming the two;
 *   - the rendered objects are those of examples/k8s: the Role's rules are rbac.yaml's, the run
 *     form's container is `baton run --lock … -- CMD`, the sidecar's probes ask /readyz and
 *     /healthz on the port `baton serve` listens on, the Pod runs as non-root;
 *   - the API server accepts every rendered object of both forms (`kubectl apply
 *     --dry-run=server`: admission and validation included);
 *   - installed for real, the chart's service account may do on leases exactly what baton needs,
 *     and nothing more (`kubectl auth can-i`);
 *   - the rendered command lines work: with that service account's token, the run form's
 *     `baton run` leads and runs its command, and the sidecar's `baton serve` turns ready on the
 *     probe's path and names its Pod as the Lease's holder.
 *
 * Skips only where helm cannot be built at all (no Go on the machine).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { helmBinary } from '../../infra/helm/binary.js';
import { KubeApiServer, freePort } from '../../infra/servers/index.js';
import { BatonProcess, ROOT, TempDir, cleanEnv, runCli, waitFor } from '../harness/cli.js';

const CHART = join(ROOT, 'charts', 'baton');
const helm = helmBinary();
const skip = 'missing' in helm ? `helm cannot be built here: ${helm.missing}` : false;

/** K8sObject is the little of a rendered object these tests read. */
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: any;
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  ports?: { name: string; containerPort: number }[];
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  securityContext?: Record<string, unknown>;
}

function runHelm(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync((helm as { path: string }).path, args, { encoding: 'utf8', timeout: 60_000, env: { ...process.env, HELM_CACHE_HOME: dir.join('helm-cache'), HELM_CONFIG_HOME: dir.join('helm-config'), HELM_DATA_HOME: dir.join('helm-data') } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** render runs `helm template` for a release in `namespace` with `--set` values; answers the text and its objects. */
function render(release: string, namespace: string, set: string[] = []): { text: string; objects: K8sObject[] } {
  const r = runHelm(['template', release, CHART, '--namespace', namespace, ...set.flatMap((s) => ['--set', s])]);
  assert.equal(r.status, 0, `helm template ${set.join(' ')}: ${r.stderr}`);
  const objects = parseAllDocuments(r.stdout).map((d) => d.toJS() as K8sObject | null).filter((o): o is K8sObject => o !== null);
  return { text: r.stdout, objects };
}

function one(objects: K8sObject[], kind: string): K8sObject {
  const found = objects.filter((o) => o.kind === kind);
  assert.equal(found.length, 1, `one ${kind} in ${objects.map((o) => o.kind).join(', ')}`);
  return found[0]!;
}

function containers(objects: K8sObject[]): Container[] {
  return one(objects, 'Deployment').spec.template.spec.containers as Container[];
}

const dir = new TempDir();
let server: KubeApiServer | undefined;
after(async () => {
  await server?.stop();
  dir.remove();
});

describe('charts/baton: lint and render', { skip }, () => {
  for (const mode of ['run', 'sidecar']) {
    it(`helm lint --strict passes (mode ${mode})`, () => {
      const r = runHelm(['lint', '--strict', CHART, '--set', `mode=${mode}`]);
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    });
  }

  it('a mode that is neither form fails the render, naming the two', () => {
    const r = runHelm(['template', 'x', CHART, '--set', 'mode=daemon']);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /mode: "daemon" is not a form of this chart; use run .* or sidecar/);
  });

  it('the Role is examples/k8s/rbac.yaml\'s, bound to the chart\'s service account', () => {
    const example = parseAllDocuments(readFileSync(join(ROOT, 'examples/k8s/rbac.yaml'), 'utf8')).map((d) => d.toJS() as K8sObject);
    const { objects } = render('report-worker', 'jobs');
    const role = one(objects, 'Role');
    assert.deepEqual(role.rules, one(example, 'Role').rules);
    const binding = one(objects, 'RoleBinding');
    const account = one(objects, 'ServiceAccount');
    assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role.metadata.name });
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: account.metadata.name, namespace: 'jobs' }]);
    assert.equal(one(objects, 'Deployment').spec.template.spec.serviceAccountName, account.metadata.name);
    const none = render('report-worker', 'jobs', ['rbac.create=false', 'serviceAccount.create=false', 'store=redis://redis:6379']).objects;
    assert.deepEqual(none.map((o) => o.kind), ['Deployment']);
  });

  it('the run form: `baton run --lock LOCK … -- CMD` as examples/k8s/deployment.yaml, identity from the Pod\'s name, non-root', () => {
    const { objects } = render('report-worker', 'jobs', ['fullnameOverride=report-worker', 'run.image.repository=registry.example.com/report-worker', 'run.image.tag=1.0']);
    const [worker, ...others] = containers(objects);
    assert.equal(others.length, 0);
    assert.equal(worker!.image, 'registry.example.com/report-worker:1.0');
    const cmd = worker!.command!;
    assert.deepEqual(cmd.slice(0, 4), ['baton', 'run', '--lock', 'report-worker']);
    assert.deepEqual(cmd.slice(cmd.indexOf('--')), ['--', 'node', 'worker.js']);
    for (const [flag, value] of [['--lease-duration', '15s'], ['--renew-deadline', '10s'], ['--retry-period', '2s']]) assert.equal(cmd[cmd.indexOf(flag!) + 1], value);
    assert.deepEqual(worker!.env!.find((e) => e.name === 'BATON_IDENTITY')!.valueFrom, { fieldRef: { fieldPath: 'metadata.name' } });
    assert.equal(worker!.env!.find((e) => e.name === 'BATON_STORE')!.value, 'k8s://');
    const pod = one(objects, 'Deployment').spec.template.spec;
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(worker!.securityContext!.allowPrivilegeEscalation, false);
    // A lock of one's own, and a store URL from a Secret rather than in the manifest.
    const custom = containers(render('r', 'jobs', ['lock=nightly', 'storeFromSecret.name=baton-store']).objects)[0]!;
    assert.equal(custom.command![custom.command!.indexOf('--lock') + 1], 'nightly');
    assert.deepEqual(custom.env!.find((e) => e.name === 'BATON_STORE')!.valueFrom, { secretKeyRef: { name: 'baton-store', key: 'url' } });
  });

  it('the sidecar form: the app beside `baton serve`, probed on /readyz and /healthz at the port it listens on', () => {
    const { objects } = render('orders', 'jobs', ['mode=sidecar', 'sidecar.containers[0].name=app', 'sidecar.containers[0].image=example/orders:1.0']);
    const [app, baton, ...others] = containers(objects);
    assert.equal(others.length, 0);
    assert.deepEqual({ name: app!.name, image: app!.image }, { name: 'app', image: 'example/orders:1.0' });
    assert.equal(baton!.name, 'baton');
    assert.equal(baton!.image, 'registry.example.com/baton:0.1.0');
    const cmd = baton!.command!;
    assert.deepEqual(cmd.slice(0, 2), ['baton', 'serve']);
    assert.equal(cmd[cmd.indexOf('--listen') + 1], '0.0.0.0:4040');
    assert.equal(cmd[cmd.indexOf('--lock') + 1], 'orders-baton');
    assert.ok(!cmd.includes('--'), 'no command: the sidecar only holds the lease and answers');
    assert.deepEqual(baton!.ports, [{ name: 'baton-http', containerPort: 4040, protocol: 'TCP' }]);
    assert.deepEqual(baton!.readinessProbe!.httpGet, { path: '/readyz', port: 'baton-http' });
    assert.deepEqual(baton!.livenessProbe!.httpGet, { path: '/healthz', port: 'baton-http' });
  });
});

describe('charts/baton on a real API server', { skip }, () => {
  const NS = 'chart-jobs';
  before(async () => {
    server = await new KubeApiServer().start();
    await server.ensureNamespace(NS);
  });

  for (const mode of ['run', 'sidecar']) {
    it(`every object of the ${mode} form passes a server-side dry run`, async () => {
      const { text, objects } = render(`dry-${mode}`, NS, [`mode=${mode}`]);
      const r = await server!.kubectl(['apply', '--dry-run=server', '-f', '-'], { input: text });
      assert.equal(r.status, 0, r.stderr);
      for (const o of objects) {
        const kind = o.kind.toLowerCase() + (o.apiVersion.includes('/') ? `.${o.apiVersion.split('/')[0]}` : '');
        assert.match(r.stdout, new RegExp(`^${kind}/${o.metadata.name} created \\(server dry run\\)$`, 'm'), r.stdout);
      }
    });
  }

  it('installed: its service account may get, list, watch, create and update leases in its namespace — nothing more', async () => {
    const { text } = render('rights', NS);
    await server!.apply(text);
    const as = `system:serviceaccount:${NS}:rights-baton`;
    const can = async (verb: string, resource: string, ns = NS) => (await server!.kubectl(['auth', 'can-i', verb, resource, '-n', ns, '--as', as])).stdout.trim();
    for (const verb of ['get', 'list', 'watch', 'create', 'update']) assert.equal(await can(verb, 'leases.coordination.k8s.io'), 'yes', verb);
    assert.equal(await can('delete', 'leases.coordination.k8s.io'), 'no');
    assert.equal(await can('get', 'leases.coordination.k8s.io', 'default'), 'no', 'no other namespace');
    assert.equal(await can('get', 'secrets'), 'no');
  });

  it('the rendered command lines run with that account\'s token: `baton run` leads and runs its command; `baton serve` turns ready and holds the Lease', async () => {
    const port = await freePort();
    const { text, objects } = render('live', NS, ['mode=sidecar', 'sidecar.listenHost=127.0.0.1', `sidecar.port=${port}`, 'leaseDuration=3s', 'renewDeadline=2s', 'retryPeriod=500ms']);
    await server!.apply(text);
    const token = await server!.kubectl(['create', 'token', 'live-baton', '-n', NS, '--duration', '1h']);
    assert.equal(token.status, 0, token.stderr);
    const kubeconfig = server!.kubeconfigFor('live-baton', token.stdout.trim(), NS);
    /** envOf is the container's environment as Kubernetes would set it for Pod `pod`. */
    const envOf = (c: Container, pod: string) => cleanEnv(dir.path, {
      KUBECONFIG: kubeconfig,
      ...Object.fromEntries(c.env!.map((e) => [e.name, e.value ?? pod])),
    });

    // The sidecar: its command as rendered (`baton` is this clone's CLI); ready on the probe's path.
    const baton = containers(objects).find((c) => c.name === 'baton')!;
    assert.equal(baton.command![0], 'baton');
    const serve = new BatonProcess(baton.command!.slice(1), { env: envOf(baton, 'live-7f9c-abcde') });
    try {
      const probe = `http://127.0.0.1:${port}${baton.readinessProbe!.httpGet!.path}`;
      await waitFor(`${probe} to answer 200`, async () => (await fetch(probe).catch(() => undefined))?.status === 200, 20_000, 100);
      const lock = baton.command![baton.command!.indexOf('--lock') + 1]!;
      const holder = await waitFor('the Lease to name the Pod', async () => {
        const r = await server!.kubectl(['get', 'lease', lock, '-n', NS, '-o', 'jsonpath={.spec.holderIdentity}']);
        return r.status === 0 && r.stdout.trim() !== '' && r.stdout.trim();
      }, 20_000, 200);
      assert.equal(holder, 'live-7f9c-abcde');
      const health = await fetch(`http://127.0.0.1:${port}${baton.livenessProbe!.httpGet!.path}`);
      assert.equal(health.status, 200);
    } finally {
      serve.signal('SIGTERM');
      await serve.waitForExit(15_000).catch(() => serve.kill());
    }

    // The run form of the same release: its command line with a short command after `--`.
    const run = containers(render('live', NS, ['leaseDuration=3s', 'renewDeadline=2s', 'retryPeriod=500ms']).objects)[0]!;
    const args = run.command!.slice(1, run.command!.indexOf('--') + 1);
    const r = await runCli([...args, process.execPath, '-e', 'console.log(`term ${process.env.BATON_TERM} as ${process.env.BATON_IDENTITY}`); process.exit(3)'], { env: envOf(run, 'live-5d8b-fghij'), timeoutMs: 30_000 });
    assert.equal(r.code, 3, `the command's exit code is baton run's:\n${r.stderr}`);
    assert.match(r.stdout, /^term \d+ as live-5d8b-fghij$/m);
  });
});
