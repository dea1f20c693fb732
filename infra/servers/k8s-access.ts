/**
 * What the real Kubernetes API server (kube-apiserver.ts) and the fake (k8s-fake.ts) share in
 * the harness: a certificate authority with a serving and a client certificate made by openssl,
 * kubeconfigs that reach the server, and plain requests to the API as an operator would make
 * them (kubectl's view: a bearer token, JSON in and out).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';

/** LIBFAKETIME is Debian's libfaketime (package faketime), used to backdate the certificates. */
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

/** ApiAnswer is an API response: its status and its JSON body (undefined when empty). */
export interface ApiAnswer {
  status: number;
  body: any;
}

/**
 * makeCertificates writes, into `dir`: ca.crt/ca.key, server.crt/server.key for 127.0.0.1 and
 * localhost, and client.crt/client.key for user `baton-cert` in group `baton`.
 *
 * Backdated by two days where libfaketime is installed (OpenSSL 3.0 has no -not_before): a real
 * API server's certificate was issued long ago, and a client whose wall clock runs hours behind
 * (a chaos clock fault) must not find it "not yet valid".
 */
export function makeCertificates(dir: string, caName: string): void {
  const backdate = existsSync(LIBFAKETIME) ? { LD_PRELOAD: LIBFAKETIME, FAKETIME: '-2d' } : {};
  const ssl = (...a: string[]) => {
    const r = spawnSync('openssl', a, { cwd: dir, encoding: 'utf8', env: { ...process.env, ...backdate } });
    if (r.status !== 0) throw new Error(`openssl ${a[0]} failed: ${r.stderr}`);
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  ssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '5', '-subj', `/CN=${caName}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  ssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n');
  ssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '5', '-extfile', 'server.ext');
  ssl('req', ...ec, '-keyout', 'client.key', '-out', 'client.csr', '-subj', '/CN=baton-cert/O=baton');
  writeFileSync(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
  ssl('x509', '-req', '-in', 'client.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'client.crt', '-days', '5', '-extfile', 'client.ext');
}

/** tokenKubeconfig is a kubeconfig (YAML, as kubectl writes one) for `server` with a bearer token. */
export function tokenKubeconfig(o: { server: string; caPem: string; token: string; cluster: string; user?: string; namespace?: string }): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- cluster:',
    `    certificate-authority-data: ${Buffer.from(o.caPem).toString('base64')}`,
    `    server: ${o.server}`,
    `  name: ${o.cluster}`,
    'contexts:',
    '- context:',
    `    cluster: ${o.cluster}`,
    `    namespace: ${o.namespace ?? 'default'}`,
    `    user: ${o.user ?? 'baton'}`,
    `  name: ${o.cluster}`,
    `current-context: ${o.cluster}`,
    'preferences: {}',
    'users:',
    `- name: ${o.user ?? 'baton'}`,
    '  user:',
    `    token: ${o.token}`,
    '',
  ].join('\n');
}

/** certKubeconfig is a JSON kubeconfig whose user authenticates with client.crt/client.key beside it. */
export function certKubeconfig(server: string, cluster: string): string {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'cert',
    clusters: [{ name: cluster, cluster: { server, 'certificate-authority': 'ca.crt' } }],
    contexts: [{ name: 'cert', context: { cluster, user: 'baton-cert', namespace: 'certs' } }],
    users: [{ name: 'baton-cert', user: { 'client-certificate': 'client.crt', 'client-key': 'client.key' } }],
  });
}

/** apiRequest makes one request to an API server with a bearer token and answers status and JSON body. */
export function apiRequest(o: { server: string; ca: string; token: string }, method: string, path: string, body?: unknown, accept = 'application/json'): Promise<ApiAnswer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { authorization: `Bearer ${o.token}`, accept };
    // Node sends a DELETE's body without chunking: it needs its length.
    if (payload !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) });
    const req = https.request(`${o.server}${path}`, { method, ca: o.ca, headers, timeout: 30_000 }, (res) => {
      let text = '';
      res.on('data', (b: Buffer) => (text += b.toString()));
      res.on('end', () => {
        if (!accept.includes('json')) return resolve({ status: res.statusCode ?? 0, body: text });
        try {
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined });
        } catch {
          reject(new Error(`${method} ${path} answered ${res.statusCode}: ${text.slice(0, 200)}`));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** leasePath is the API path of Lease `name` in `namespace` (or of the namespace's Leases). */
export function leasePath(namespace: string, name?: string): string {
  return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
}

/** deleteOptions is a DeleteOptions body with preconditions, or undefined without them. */
export function deleteOptions(preconditions?: { uid?: string; resourceVersion?: string }): unknown {
  return preconditions ? { kind: 'DeleteOptions', apiVersion: 'v1', preconditions } : undefined;
}

/** readCa reads the CA certificate a server's directory holds. */
export function readCa(dir: string): string {
  return readFileSync(join(dir, 'ca.crt'), 'utf8');
}
