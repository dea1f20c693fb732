/**
 * K8sFakeServer runs the fake API server (infra/fakes/k8s-api.ts — a fake, since no kube-apiserver can run
 * here) as its own process on a free loopback port, over HTTPS with a certificate authority made
 * by openssl for this server alone, and writes a kubeconfig (YAML, as kubectl writes one:
 * https server, certificate-authority-data, a bearer token) that tests pass through KUBECONFIG.
 * Like the other managed servers it can be killed, restarted with its data, paused and resumed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManagedServer, requireBinary, waitForPort } from './base.js';

const FAKE = fileURLToPath(new URL('../fakes/k8s-api.ts', import.meta.url));
/** LIBFAKETIME is Debian's libfaketime (package faketime), used to backdate the certificates. */
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

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
    return readFileSync(join(this.dir, 'ca.crt'), 'utf8');
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
  requestCounts(): Promise<Record<string, number>> {
    return new Promise((resolve, reject) => {
      const req = https.get(`${this.server}/fake/stats`, { ca: this.ca, headers: { authorization: `Bearer ${this.token}` }, timeout: 30_000 }, (res) => {
        let text = '';
        res.on('data', (b: Buffer) => (text += b.toString()));
        res.on('end', () => {
          try {
            resolve((JSON.parse(text) as { requests: Record<string, number> }).requests);
          } catch {
            reject(new Error(`k8s fake: /fake/stats answered ${res.statusCode}: ${text.slice(0, 200)}`));
          }
        });
      });
      req.on('timeout', () => req.destroy(new Error('k8s fake: /fake/stats timed out')));
      req.on('error', reject);
    });
  }

  /**
   * api makes one request to the API with the server's token, as kubectl or client-go would (a
   * test's operator: delete a Lease behind the store's back), and answers the status and the JSON body.
   */
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, accept: 'application/json' };
      // Node sends a DELETE's body without chunking: it needs its length.
      if (payload !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) });
      const req = https.request(`${this.server}${path}`, { method, ca: this.ca, headers, timeout: 30_000 }, (res) => {
        let text = '';
        res.on('data', (b: Buffer) => (text += b.toString()));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined });
          } catch {
            reject(new Error(`k8s fake: ${method} ${path} answered ${res.statusCode}: ${text.slice(0, 200)}`));
          }
        });
      });
      req.on('timeout', () => req.destroy(new Error(`k8s fake: ${method} ${path} timed out`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** deleteLease deletes Lease `name` in `namespace` (optionally with DeleteOptions preconditions); 404 if it is not there. */
  deleteLease(namespace: string, name: string, preconditions?: { uid?: string; resourceVersion?: string }): Promise<{ status: number; body: any }> {
    const options = preconditions ? { kind: 'DeleteOptions', apiVersion: 'v1', preconditions } : undefined;
    return this.api('DELETE', `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases/${encodeURIComponent(name)}`, options);
  }

  private admin(path: string): void {
    const r = spawnSync('curl', ['-sS', '--max-time', '5', '--cacert', join(this.dir, 'ca.crt'), '-H', `Authorization: Bearer ${this.token}`, '-X', 'POST', `${this.server}${path}`], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${path} failed: ${r.stderr}`);
  }

  protected override async prepare(): Promise<void> {
    // Backdated by two days where libfaketime is installed (OpenSSL 3.0 has no -not_before): a
    // real API server's certificate was issued long ago, and a client whose wall clock runs
    // hours behind (a chaos clock fault) must not find it "not yet valid".
    const backdate = existsSync(LIBFAKETIME) ? { LD_PRELOAD: LIBFAKETIME, FAKETIME: '-2d' } : {};
    const ssl = (...a: string[]) => {
      const r = spawnSync('openssl', a, { cwd: this.dir, encoding: 'utf8', env: { ...process.env, ...backdate } });
      if (r.status !== 0) throw new Error(`openssl ${a[0]} failed: ${r.stderr}`);
    };
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    ssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '5', '-subj', '/CN=baton-fake-apiserver-ca',
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
    ssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
    writeFileSync(join(this.dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
    ssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '5', '-extfile', 'server.ext');
    // A client certificate for user "baton-cert", signed by the same CA (kubeconfigWithCert).
    ssl('req', ...ec, '-keyout', 'client.key', '-out', 'client.csr', '-subj', '/CN=baton-cert/O=baton');
    writeFileSync(join(this.dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
    ssl('x509', '-req', '-in', 'client.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'client.crt', '-days', '5', '-extfile', 'client.ext');
    const caData = readFileSync(join(this.dir, 'ca.crt')).toString('base64');
    writeFileSync(this.kubeconfig, [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- cluster:',
      `    certificate-authority-data: ${caData}`,
      `    server: ${this.server}`,
      '  name: fake',
      'contexts:',
      '- context:',
      '    cluster: fake',
      '    namespace: default',
      '    user: baton',
      '  name: fake',
      'current-context: fake',
      'preferences: {}',
      'users:',
      '- name: baton',
      '  user:',
      `    token: ${this.token}`,
      '',
    ].join('\n'));
    // The same cluster, a user with a client certificate and key given as files, in JSON.
    writeFileSync(this.kubeconfigWithCert, JSON.stringify({
      apiVersion: 'v1', kind: 'Config', 'current-context': 'cert',
      clusters: [{ name: 'fake', cluster: { server: this.server, 'certificate-authority': 'ca.crt' } }],
      contexts: [{ name: 'cert', context: { cluster: 'fake', user: 'baton-cert', namespace: 'certs' } }],
      users: [{ name: 'baton-cert', user: { 'client-certificate': 'client.crt', 'client-key': 'client.key' } }],
    }));
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
