/**
 * KubeApiServer runs a real Kubernetes API server — kube-apiserver built from the
 * k8s.io/kubernetes module by infra/kube/build.sh — over its own real etcd of the current line
 * (3.6, built from go.etcd.io/etcd/server/v3), both on free loopback ports:
 *
 *   - its own certificate authority, serving certificate for 127.0.0.1 and a client certificate
 *     (user `baton-cert`, group `baton`) accepted through --client-ca-file;
 *   - a static token file: `admin` (group system:masters) and test users with no rights until a
 *     test binds a Role to them (`userToken`);
 *   - service-account signing keys, so `kubectl create token` (the TokenRequest API) issues
 *     tokens for service accounts bound only to the Roles a test applies;
 *   - RBAC authorization on, anonymous requests refused;
 *   - no controller manager, scheduler or kubelet: objects are stored and validated (admission
 *     included), nothing reconciles them — what a lease store and a server-side dry run need.
 *
 * Clients reach it through a TCP proxy (infra/proxy.ts), so `cut()` can drop every connection
 * while the server stays up. The API server and its etcd can each be killed, frozen (SIGSTOP)
 * and restarted with their data: `kill()`/`pause()` act on the API server, `etcd` on its etcd.
 */
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { kubeBinary } from '../kube/binaries.js';
import { PartitionProxy } from '../proxy.js';
import { ManagedServer, requireBinary } from './base.js';
import { EtcdServer } from './etcd.js';
import { apiRequest, certKubeconfig, deleteOptions, leasePath, makeCertificates, readCa, tokenKubeconfig, type ApiAnswer } from './k8s-access.js';

/** apiserver_request_total's `verb` label values, as Kubernetes verbs. */
const METRIC_VERBS: Record<string, string> = { GET: 'get', LIST: 'list', WATCH: 'watch', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete', APPLY: 'patch' };

/** The test users of the token file, beside `admin`: they have no rights until a test grants some. */
const TEST_USERS = ['alice', 'bob', 'carol'] as const;
export type KubeTestUser = (typeof TEST_USERS)[number];

/** KubeApiServer: see the header comment. */
export class KubeApiServer extends ManagedServer {
  readonly token = `baton-admin-${Math.random().toString(36).slice(2)}`;
  readonly etcd = new EtcdServer(undefined, { line: 'current' });
  private proxy?: PartitionProxy;
  private readyOnce = false;
  private readonly userTokens = new Map<string, string>(TEST_USERS.map((u) => [u, `baton-${u}-${Math.random().toString(36).slice(2)}`]));

  /**
   * `audit: false` (the bench at 10,000 leases) counts requests from apiserver_request_total
   * instead of an audit log line per request, which would load the server it measures;
   * `extraArgs` go to kube-apiserver last (e.g. tighter in-flight limits).
   */
  constructor(private readonly options: { audit?: boolean; extraArgs?: readonly string[] } = {}) {
    super('kube-apiserver');
    requireBinary(['/usr/bin/openssl'], 'openssl');
    kubeBinary('kube-apiserver');
  }

  /** kubeconfig is the path of an admin kubeconfig (context "real", namespace "default"). */
  get kubeconfig(): string {
    return join(this.dir, 'kubeconfig');
  }

  /** kubeconfigWithCert is a JSON kubeconfig whose user authenticates with a client certificate (files beside it). */
  get kubeconfigWithCert(): string {
    return join(this.dir, 'kubeconfig-cert.json');
  }

  /** server is the URL clients use (through the proxy). */
  get server(): string {
    return `https://127.0.0.1:${this.proxy?.port ?? 0}`;
  }

  /** ca is the PEM of the certificate authority that signed the server's certificate. */
  get ca(): string {
    return readCa(this.dir);
  }

  /** url is the store URL for `namespace`, with the admin kubeconfig named in it. */
  url(namespace = 'default'): string {
    return `k8s://${namespace}?kubeconfig=${encodeURIComponent(this.kubeconfig)}`;
  }

  /** userToken is the bearer token of a test user of the token file. */
  userToken(user: KubeTestUser): string {
    return this.userTokens.get(user)!;
  }

  /** kubeconfigFor writes a kubeconfig for `token` (a test user's or a service account's) and returns its path. */
  kubeconfigFor(name: string, token: string, namespace = 'default'): string {
    const path = join(this.dir, `kubeconfig-${name}`);
    writeFileSync(path, tokenKubeconfig({ server: this.server, caPem: this.ca, token, cluster: 'real', user: name, namespace }));
    return path;
  }

  /** cut drops every open client connection (a cut network, without a restart). */
  async cut(): Promise<void> {
    this.proxy?.cutAll();
  }

  /**
   * requestCounts is the server's own count of the Lease requests it served outside kube-system,
   * by Kubernetes verb (get, list, watch, create, update, patch, delete), read from its audit log
   * (every Lease request at level Metadata; a watch is counted when it starts, anything else when
   * it completes). Not apiserver_request_total: that counter has no namespace label, and the API
   * server renews its own identity Lease in kube-system every 10 s.
   */
  async requestCounts(): Promise<Record<string, number>> {
    if (this.options.audit === false) return this.requestTotals();
    const counts: Record<string, number> = {};
    let text = '';
    try {
      text = readFileSync(join(this.dir, 'audit.log'), 'utf8');
    } catch {
      return counts;
    }
    for (const line of text.split('\n')) {
      if (!line) continue;
      const e = JSON.parse(line) as { stage: string; verb: string; objectRef?: { namespace?: string; resource?: string } };
      if (e.objectRef?.resource !== 'leases' || e.objectRef.namespace === 'kube-system') continue;
      if (e.stage !== (e.verb === 'watch' ? 'ResponseStarted' : 'ResponseComplete')) continue;
      counts[e.verb] = (counts[e.verb] ?? 0) + 1;
    }
    return counts;
  }

  /**
   * requestTotals is apiserver_request_total summed over resource="leases", by Kubernetes verb:
   * cheap to keep, but in every namespace, so it includes the API server's own identity Lease
   * (one update per 10 s in kube-system); a watch is counted when it ends.
   */
  async requestTotals(): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const { line, value } of await this.metricLines('apiserver_request_total{')) {
      if (!line.includes('resource="leases"')) continue;
      const verb = /verb="([A-Z]+)"/.exec(line)?.[1];
      if (!verb) continue;
      const k = METRIC_VERBS[verb] ?? 'other';
      counts[k] = (counts[k] ?? 0) + value;
    }
    return counts;
  }

  /** metricLines reads /metrics as the admin (exempt from the in-flight limits): the lines starting with `prefix`, with their values. */
  async metricLines(prefix: string): Promise<{ line: string; value: number }[]> {
    const res = await apiRequest({ server: this.server, ca: this.ca, token: this.token }, 'GET', '/metrics', undefined, 'text/plain');
    if (res.status !== 200) throw new Error(`kube-apiserver: /metrics answered ${res.status}`);
    return (res.body as string).split('\n').filter((l) => l.startsWith(prefix)).map((line) => ({ line, value: Number(line.slice(line.lastIndexOf(' ') + 1)) }));
  }

  /** api makes one request as the admin, as kubectl would, and answers the status and the JSON body. */
  api(method: string, path: string, body?: unknown): Promise<ApiAnswer> {
    return apiRequest({ server: this.server, ca: this.ca, token: this.token }, method, path, body);
  }

  /** deleteLease deletes Lease `name` in `namespace` (optionally with DeleteOptions preconditions); 404 if it is not there. */
  deleteLease(namespace: string, name: string, preconditions?: { uid?: string; resourceVersion?: string }): Promise<ApiAnswer> {
    return this.api('DELETE', leasePath(namespace, name), deleteOptions(preconditions));
  }

  /**
   * kubectl runs kubectl as the admin (or with `kubeconfig`); answers its exit status and output.
   * Never synchronously: the proxy clients go through lives on this process's event loop.
   */
  kubectl(args: string[], o: { input?: string; kubeconfig?: string } = {}): Promise<{ status: number; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      const child = execFile(kubeBinary('kubectl'), ['--kubeconfig', o.kubeconfig ?? this.kubeconfig, ...args], { encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) => {
        const status = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : -1) : 0;
        resolve({ status, stdout, stderr });
      });
      child.stdin?.end(o.input ?? '');
    });
  }

  /** apply applies a manifest (YAML or JSON) as the admin; throws with kubectl's words if it fails. */
  async apply(manifest: string): Promise<void> {
    const r = await this.kubectl(['apply', '-f', '-'], { input: manifest });
    if (r.status !== 0) throw new Error(`kubectl apply failed: ${r.stderr.trim()}`);
  }

  /** ensureNamespace creates `namespace` if it does not exist (the real server refuses objects in a missing one). */
  async ensureNamespace(namespace: string): Promise<void> {
    await this.apply(JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }));
  }

  /**
   * grant binds `subject` to a Role in `namespace` allowing `verbs` on Leases (creating both and
   * the namespace): what a cluster admin gives a workload. The Role is named after the subject.
   */
  async grant(namespace: string, subject: { kind: 'User' | 'Group' | 'ServiceAccount'; name: string }, verbs: readonly string[]): Promise<void> {
    await this.ensureNamespace(namespace);
    const name = `baton-test-${subject.kind.toLowerCase()}-${subject.name}`.replace(/[^a-z0-9-]/g, '-');
    const rbac = 'rbac.authorization.k8s.io';
    await this.apply(JSON.stringify({
      apiVersion: 'v1', kind: 'List', items: [
        { apiVersion: `${rbac}/v1`, kind: 'Role', metadata: { name, namespace }, rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs }] },
        { apiVersion: `${rbac}/v1`, kind: 'RoleBinding', metadata: { name, namespace }, roleRef: { apiGroup: rbac, kind: 'Role', name },
          subjects: [subject.kind === 'ServiceAccount' ? { kind: 'ServiceAccount', name: subject.name, namespace } : { apiGroup: rbac, ...subject }] },
      ],
    }));
  }

  override async start(): Promise<this> {
    if (!this.etcd.pid) await this.etcd.start();
    return super.start();
  }

  override async stop(): Promise<void> {
    await super.stop();
    await this.etcd.stop();
    await this.proxy?.close();
  }

  protected override async prepare(): Promise<void> {
    this.proxy = new PartitionProxy(this.port);
    await this.proxy.listen();
    makeCertificates(this.dir, 'baton-kube-ca');
    const ssl = (...a: string[]) => {
      const r = spawnSync('openssl', a, { cwd: this.dir, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`openssl ${a[0]} failed: ${r.stderr}`);
    };
    ssl('genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', 'sa.key');
    ssl('pkey', '-in', 'sa.key', '-pubout', '-out', 'sa.pub');
    // token,user,uid,"groups"
    const users = [...this.userTokens].map(([u, t], i) => `${t},${u},uid-${i + 2}`);
    writeFileSync(join(this.dir, 'tokens.csv'), [`${this.token},admin,uid-1,"system:masters"`, ...users, ''].join('\n'));
    writeFileSync(this.kubeconfig, tokenKubeconfig({ server: this.server, caPem: this.ca, token: this.token, cluster: 'real', user: 'admin' }));
    writeFileSync(this.kubeconfigWithCert, certKubeconfig(this.server, 'real'));
    writeFileSync(join(this.dir, 'audit-policy.yaml'), [
      'apiVersion: audit.k8s.io/v1',
      'kind: Policy',
      'omitStages: [RequestReceived]',
      'rules:',
      '- level: Metadata',
      '  resources: [{ group: coordination.k8s.io, resources: [leases] }]',
      '- level: None',
      '',
    ].join('\n'));
  }

  protected override command() {
    const f = (name: string) => join(this.dir, name);
    return {
      bin: kubeBinary('kube-apiserver'),
      args: [
        `--etcd-servers=${this.etcd.endpoint}`,
        '--bind-address=127.0.0.1', `--secure-port=${this.port}`, '--advertise-address=127.0.0.1',
        `--tls-cert-file=${f('server.crt')}`, `--tls-private-key-file=${f('server.key')}`, `--cert-dir=${f('certs')}`,
        `--client-ca-file=${f('ca.crt')}`, `--token-auth-file=${f('tokens.csv')}`, '--anonymous-auth=false',
        '--authorization-mode=RBAC',
        '--service-account-issuer=https://kubernetes.default.svc', `--service-account-key-file=${f('sa.pub')}`,
        `--service-account-signing-key-file=${f('sa.key')}`, '--api-audiences=https://kubernetes.default.svc',
        '--service-cluster-ip-range=10.96.0.0/16',
        // Nothing here runs the endpoints of the `kubernetes` Service (no routable address).
        '--endpoint-reconciler-type=none',
        // spec.strategy and spec.preferredHolder of a Lease are kept only with this gate on.
        '--feature-gates=CoordinatedLeaderElection=true', '--runtime-config=coordination.k8s.io/v1beta1=true',
        ...(this.options.audit === false ? [] : [`--audit-policy-file=${f('audit-policy.yaml')}`, `--audit-log-path=${f('audit.log')}`, '--audit-log-maxsize=0']),
        '--profiling=false', '--v=0',
        ...(this.options.extraArgs ?? []),
      ],
    };
  }

  /**
   * ready waits for /readyz the first time (the RBAC bootstrap roles and the rest of the
   * post-start hooks done). On a restart over the same etcd it waits only for the first Lease
   * list it answers: it serves Leases from then on (well before /readyz or even /livez), and a
   * fault's heal must not be dated later than that.
   */
  protected override async ready(): Promise<void> {
    const probe = this.readyOnce ? '/apis/coordination.k8s.io/v1/namespaces/default/leases?limit=1' : '/readyz';
    const until = Date.now() + 90_000;
    for (;;) {
      if (!this.child || this.child.exitCode !== null || this.child.signalCode !== null) throw new Error(`kube-apiserver exited with ${this.child?.exitCode ?? this.child?.signalCode}`);
      try {
        const res = await apiRequest({ server: `https://127.0.0.1:${this.port}`, ca: this.ca, token: this.token }, 'GET', probe, undefined, this.readyOnce ? 'application/json' : 'text/plain');
        if (res.status === 200) {
          this.readyOnce = true;
          return;
        }
      } catch {
        // not listening yet
      }
      if (Date.now() > until) throw new Error(`kube-apiserver ${probe} never answered ok`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
