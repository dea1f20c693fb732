/**
 * K8sFakeServer runs the fake API server (infra/fakes/k8s-api.ts — a FAKE; the tests run on the
 * real kube-apiserver, kube-apiserver.ts, and keep the fake only for what the real server cannot
 * be made to do on demand: hold every write for N ms, a watch history of 5 events) as its own process on a free loopback port, over HTTPS with a certificate authority made
 * by openssl for this server alone, and writes a kubeconfig (YAML, as kubectl writes one:
 * https server, certificate-authority-data, a bearer token) that tests pass through KUBECONFIG.
 * Like the other managed servers it can be killed, restarted with its data, paused and resumed.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManagedServer, requireBinary, waitForPort } from './base.js';
import { apiRequest, certKubeconfig, deleteOptions, leasePath, makeCertificates, readCa, tokenKubeconfig, type ApiAnswer } from './k8s-access.js';

const FAKE = fileURLToPath(new URL('../fakes/k8s-api.ts', import.meta.url));

/** K8sFakeServer: see the header comment. */
export class K8sFakeServer extends ManagedServer {
  readonly token = `baton-test-${Math.random().toString(36).slice(2)}`;
  constructor(private readonly options: { history?: number } = {}) {
    super('k8s-fake');
    requireBinary(['/usr/bin/openssl'], 'openssl');
  }

  /** kubeconfig is the path of a kubeconfig that reaches this server (context "fake", namespace "default"). */
  get kubeconfig(): string {
    return join(this.dir, 'kubeconfig');
  }

  /** kubeconfigWithCert is a JSON kubeconfig whose user authenticates with a client certificate (files beside it). */
  get kubeconfigWithCert(): string {
    return join(this.dir, 'kubeconfig-cert.json');
  }

  /** server is the API server's URL. */
  get server(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  /** ca is the PEM of the certificate authority that signed the server's certificate. */
  get ca(): string {
    return readCa(this.dir);
  }

  /** url is the store URL for `namespace`, with this server's kubeconfig named in it. */
  url(namespace = 'default'): string {
    return `k8s://${namespace}?kubeconfig=${encodeURIComponent(this.kubeconfig)}`;
  }

  /** cut asks the server to drop every open connection (a cut network, without a restart). */
  async cut(): Promise<void> {
    this.admin('/fake/cut');
  }

  /** slowWrites makes the server hold every write for `ms` before applying it (0: no more). */
  async slowWrites(ms: number): Promise<void> {
    this.admin(`/fake/slow?ms=${ms}`);
  }

  /** requestCounts is the server's own count of the requests it served, by verb (GET /fake/stats). */
  async requestCounts(): Promise<Record<string, number>> {
    const res = await this.api('GET', '/fake/stats');
    if (res.status !== 200) throw new Error(`k8s fake: /fake/stats answered ${res.status}`);
    return (res.body as { requests: Record<string, number> }).requests;
  }

  /**
   * api makes one request to the API with the server's token, as kubectl or client-go would (a
   * test's operator: delete a Lease behind the store's back), and answers the status and the JSON body.
   */
  api(method: string, path: string, body?: unknown): Promise<ApiAnswer> {
    return apiRequest({ server: this.server, ca: this.ca, token: this.token }, method, path, body);
  }

  /** deleteLease deletes Lease `name` in `namespace` (optionally with DeleteOptions preconditions); 404 if it is not there. */
  deleteLease(namespace: string, name: string, preconditions?: { uid?: string; resourceVersion?: string }): Promise<ApiAnswer> {
    return this.api('DELETE', leasePath(namespace, name), deleteOptions(preconditions));
  }

  private admin(path: string): void {
    const r = spawnSync('curl', ['-sS', '--max-time', '5', '--cacert', join(this.dir, 'ca.crt'), '-H', `Authorization: Bearer ${this.token}`, '-X', 'POST', `${this.server}${path}`], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${path} failed: ${r.stderr}`);
  }

  protected override async prepare(): Promise<void> {
    makeCertificates(this.dir, 'baton-fake-apiserver-ca');
    writeFileSync(this.kubeconfig, tokenKubeconfig({ server: this.server, caPem: this.ca, token: this.token, cluster: 'fake' }));
    // The same cluster, a user with a client certificate and key given as files, in JSON.
    writeFileSync(this.kubeconfigWithCert, certKubeconfig(this.server, 'fake'));
  }

  protected override command() {
    const tsx = fileURLToPath(import.meta.resolve('tsx'));
    return {
      bin: process.execPath,
      args: ['--import', tsx, FAKE, '--port', String(this.port), '--state', join(this.dir, 'state.json'),
        '--cert', join(this.dir, 'server.crt'), '--key', join(this.dir, 'server.key'), '--token', this.token, '--client-ca', join(this.dir, 'ca.crt'),
        '--history', String(this.options.history ?? 1000)],
    };
  }

  protected override async ready(): Promise<void> {
    await waitForPort(this.port, 30_000, this.child);
  }
}
