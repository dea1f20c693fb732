/**
 * The image as the chart's Pod runs it, on the real kube-apiserver: the chart (run form) is
 * installed, and the image's `baton run` gets what a kubelet gives the Pod — the service account's
 * token, CA and namespace mounted at /var/run/secrets/kubernetes.io/serviceaccount,
 * KUBERNETES_SERVICE_HOST/PORT, the rendered environment (BATON_IDENTITY = the Pod's name) and
 * the rendered security context (read-only root, /tmp an emptyDir, no capabilities, no privilege
 * escalation, the image's non-root user). It must lead through `k8s://` with only the chart's
 * Role, run its command, and release the Lease when the command ends.
 *
 * Needs the image tools (skips as test/image/image.test.ts does) and helm (skips without Go).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { helmBinary } from '../../infra/helm/binary.js';
import { KubeApiServer } from '../../infra/servers/index.js';
import { ROOT, TempDir } from '../harness/cli.js';
import { buildImage, imageSkip, runFlags, shAsync } from './podman.js';

const helm = imageSkip ? undefined : helmBinary();
const skip = imageSkip || (helm && 'missing' in helm ? `helm cannot be built here: ${helm.missing}` : false);
const NS = 'pod-test';
const POD = 'pod-baton-6c9f7d4b8-x2k4q';

const dir = new TempDir();
let server: KubeApiServer | undefined;
after(async () => {
  await server?.stop();
  dir.remove();
});

describe('the image as the chart\'s Pod runs it, on a real API server', { skip }, () => {
  let image = '';
  let rendered = '';
  before(async () => {
    image = buildImage(dir.path).image;
    const r = spawnSync((helm as { path: string }).path, ['template', 'pod', join(ROOT, 'charts/baton'), '--namespace', NS, '--set', 'leaseDuration=3s', '--set', 'renewDeadline=2s', '--set', 'retryPeriod=500ms'], {
      encoding: 'utf8', env: { ...process.env, HELM_CACHE_HOME: dir.join('h1'), HELM_CONFIG_HOME: dir.join('h2'), HELM_DATA_HOME: dir.join('h3') },
    });
    assert.equal(r.status, 0, r.stderr);
    rendered = r.stdout;
    server = await new KubeApiServer().start();
    await server.ensureNamespace(NS);
    await server.apply(rendered);
  });

  it('baton run leads through k8s:// with the service account\'s mounted token, runs its command, and releases', async () => {
    const objects = parseAllDocuments(rendered).map((d) => d.toJS()).filter(Boolean) as any[];
    const deployment = objects.find((o) => o.kind === 'Deployment');
    const pod = deployment.spec.template.spec;
    const worker = pod.containers[0] as { command: string[]; env: { name: string; value?: string }[]; securityContext: Record<string, any> };
    const lock = worker.command[worker.command.indexOf('--lock') + 1]!;

    // What the kubelet mounts for the Pod's service account.
    const token = await server!.kubectl(['create', 'token', pod.serviceAccountName, '-n', NS, '--duration', '1h']);
    assert.equal(token.status, 0, token.stderr);
    const sa = dir.join('serviceaccount');
    mkdirSync(sa);
    writeFileSync(join(sa, 'token'), token.stdout.trim());
    writeFileSync(join(sa, 'ca.crt'), server!.ca);
    writeFileSync(join(sa, 'namespace'), NS);
    for (const p of [dir.path, sa]) chmodSync(p, 0o755); // readable by the image's uid 10001
    const port = new URL(server!.server).port;

    // The rendered security context, as podman flags.
    const sc = worker.securityContext;
    assert.equal(pod.securityContext.runAsNonRoot, true);
    const security = [
      ...(sc.readOnlyRootFilesystem ? ['--read-only'] : []),
      ...(sc.allowPrivilegeEscalation === false ? ['--security-opt', 'no-new-privileges'] : []),
      ...(sc.capabilities?.drop ?? []).flatMap((c: string) => ['--cap-drop', c]),
      '--tmpfs', '/tmp', // the emptyDir
    ];
    const env = worker.env.flatMap((e) => ['--env', `${e.name}=${e.value ?? POD}`]); // BATON_IDENTITY: metadata.name

    // The rendered command, with a short shell command after `--` in place of the worker's.
    assert.equal(worker.command[0], 'baton');
    const args = worker.command.slice(1, worker.command.indexOf('--') + 1);
    // Not spawnSync: the API server is reached through a proxy on this process's event loop.
    const r = await shAsync('podman', ['run', '--rm', '--network', 'host', ...runFlags(), ...security, ...env,
      '--volume', `${sa}:/var/run/secrets/kubernetes.io/serviceaccount:ro`,
      '--env', 'KUBERNETES_SERVICE_HOST=127.0.0.1', '--env', `KUBERNETES_SERVICE_PORT=${port}`,
      '--entrypoint', 'baton', image, ...args,
      'sh', '-c', 'echo "uid $(id -u) term $BATON_TERM as $BATON_IDENTITY"; exit 5'], 60_000);
    assert.equal(r.status, 5, `baton run exits with its command's code:\n${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, new RegExp(`^uid 10001 term \\d+ as ${POD}$`, 'm'));

    const got = await server!.kubectl(['get', 'lease', lock, '-n', NS, '-o', 'json']);
    assert.equal(got.status, 0, got.stderr);
    const lease = JSON.parse(got.stdout) as { spec: { holderIdentity?: string } };
    assert.ok(!lease.spec.holderIdentity, `released: holderIdentity is ${JSON.stringify(lease.spec.holderIdentity)}`);
  });
});
