/**
 * Where the API server is and how to authenticate, resolved the way kubectl and client-go do:
 *
 *   1. In a Pod: KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT and the service account's
 *      files (/var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt,namespace}); the token
 *      file is read again every minute, since bound tokens rotate.
 *   2. Else the kubeconfig named by the `kubeconfig` option, else the first file of $KUBECONFIG,
 *      else ~/.kube/config: its context (the `context` option, else current-context) gives the
 *      cluster (server, certificate-authority[-data], insecure-skip-tls-verify, tls-server-name)
 *      and the user (token, tokenFile, client-certificate[-data] + client-key[-data], username +
 *      password). exec plugins and auth-providers are not supported: a one-line error says so.
 *
 * Only the first file of a $KUBECONFIG list is read (kubectl merges them). A kubeconfig in JSON
 * needs nothing more; a YAML one (the usual) needs the `yaml` package, loaded only then.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, resolve } from 'node:path';
import { InvalidConfigError, errorMessage } from '../../core/errors.js';

const require = createRequire(import.meta.url);

/** SERVICE_ACCOUNT_DIR is where Kubernetes mounts a Pod's service account. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * K8sConnection is a configured connection to an API server: what the store needs to send
 * requests. Give one to K8sStore directly to bypass the resolution above.
 */
export interface K8sConnection {
  /** Base URL of the API server, e.g. https://10.0.0.1:443 (http:// for `kubectl proxy`). */
  server: string;
  /** PEM CA bundle to trust; default: Node's built-in CAs. */
  ca?: string | Buffer;
  /** Bearer token, or a function returning the current one (rotating tokens). */
  token?: string | (() => string);
  /** Client certificate and key (PEM) for mutual TLS. */
  cert?: string | Buffer;
  key?: string | Buffer;
  /** Basic auth (old clusters). */
  username?: string;
  password?: string;
  /** Skip verifying the server's certificate (insecure-skip-tls-verify). */
  insecureSkipTlsVerify?: boolean;
  /** Server name to verify the certificate against (tls-server-name). */
  tlsServerName?: string;
  /** Namespace the credentials suggest (service account's, or the context's). */
  namespace?: string;
  /** Where the connection came from, for messages ("in-cluster", "kubeconfig /path"). */
  source?: string;
}

/** ResolveOptions: which kubeconfig and context, and the environment to read. */
export interface ResolveOptions {
  kubeconfig?: string;
  context?: string;
  env?: NodeJS.ProcessEnv;
  /** The service account directory (tests point it elsewhere). */
  serviceAccountDir?: string;
}

/** resolveConnection finds the API server and credentials (see the header). Throws InvalidConfigError. */
export function resolveConnection(options: ResolveOptions = {}): K8sConnection {
  const env = options.env ?? process.env;
  if (!options.kubeconfig && !options.context && env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) {
    return inCluster(env, options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR);
  }
  const path = options.kubeconfig ?? env.KUBECONFIG?.split(':').find((p) => p !== '') ?? resolve(env.HOME || homedir(), '.kube', 'config');
  if (!existsSync(path)) {
    throw new InvalidConfigError(`k8s: no kubeconfig at ${path} and not in a Pod (KUBERNETES_SERVICE_HOST unset); set KUBECONFIG or ?kubeconfig=PATH`);
  }
  return fromKubeconfig(path, options.context);
}

function inCluster(env: NodeJS.ProcessEnv, dir: string): K8sConnection {
  const host = env.KUBERNETES_SERVICE_HOST!;
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${env.KUBERNETES_SERVICE_PORT}`;
  const tokenPath = resolve(dir, 'token');
  const read = (name: string) => {
    try {
      return readFileSync(resolve(dir, name), 'utf8');
    } catch (err) {
      throw new InvalidConfigError(`k8s: in a Pod but cannot read the service account's ${name} in ${dir}: ${errorMessage(err)}`);
    }
  };
  let token = read('token').trim();
  let readAt = Date.now();
  const ca = existsSync(resolve(dir, 'ca.crt')) ? read('ca.crt') : undefined;
  const namespace = existsSync(resolve(dir, 'namespace')) ? read('namespace').trim() : undefined;
  return {
    server,
    ca,
    // Bound service-account tokens are rotated by the kubelet: re-read the file every minute.
    token: () => {
      if (Date.now() - readAt > 60_000) {
        try {
          token = readFileSync(tokenPath, 'utf8').trim();
        } catch {
          // keep the last token; the server will say if it is no longer good
        }
        readAt = Date.now();
      }
      return token;
    },
    namespace: namespace || undefined,
    source: 'in-cluster service account',
  };
}

type Doc = Record<string, unknown>;

function parseKubeconfig(path: string): Doc {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new InvalidConfigError(`k8s: cannot read kubeconfig ${path}: ${errorMessage(err)}`);
  }
  let doc: unknown;
  if (/^\s*\{/.test(text)) {
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw new InvalidConfigError(`k8s: kubeconfig ${path} is not valid JSON: ${errorMessage(err)}`);
    }
  } else {
    let yaml: typeof import('yaml');
    try {
      yaml = require('yaml');
    } catch {
      throw new InvalidConfigError(`k8s: kubeconfig ${path} is YAML and the yaml package cannot be loaded (npm install yaml)`);
    }
    try {
      doc = yaml.parse(text);
    } catch (err) {
      throw new InvalidConfigError(`k8s: kubeconfig ${path} is not valid YAML: ${errorMessage(err).split('\n')[0]}`);
    }
  }
  if (!doc || typeof doc !== 'object') throw new InvalidConfigError(`k8s: kubeconfig ${path} is empty`);
  return doc as Doc;
}

/** named finds `{name, <field>: {...}}` in a kubeconfig list. */
function named(doc: Doc, list: string, field: string, name: string, path: string): Doc {
  const items = Array.isArray(doc[list]) ? (doc[list] as Doc[]) : [];
  const item = items.find((x) => x && x.name === name);
  if (!item) throw new InvalidConfigError(`k8s: kubeconfig ${path} has no ${field} named "${name}"`);
  return (item[field] as Doc) ?? {};
}

function fromKubeconfig(path: string, context?: string): K8sConnection {
  const doc = parseKubeconfig(path);
  const contextName = context ?? (doc['current-context'] as string | undefined);
  if (!contextName) throw new InvalidConfigError(`k8s: kubeconfig ${path} has no current-context; name one with ?context=`);
  const ctx = named(doc, 'contexts', 'context', contextName, path);
  const cluster = named(doc, 'clusters', 'cluster', String(ctx.cluster ?? ''), path);
  const user = ctx.user ? named(doc, 'users', 'user', String(ctx.user), path) : {};
  const base = dirname(path);
  const data = (inline: unknown, file: unknown, what: string): Buffer | undefined => {
    if (typeof inline === 'string' && inline) return Buffer.from(inline, 'base64');
    if (typeof file === 'string' && file) {
      try {
        return readFileSync(resolve(base, file));
      } catch (err) {
        throw new InvalidConfigError(`k8s: kubeconfig ${path}: cannot read ${what} ${file}: ${errorMessage(err)}`);
      }
    }
    return undefined;
  };
  const server = cluster.server;
  if (typeof server !== 'string' || !/^https?:\/\//.test(server)) {
    throw new InvalidConfigError(`k8s: kubeconfig ${path}: cluster "${String(ctx.cluster)}" has no https:// server`);
  }
  if (user.exec || user['auth-provider']) {
    throw new InvalidConfigError(`k8s: kubeconfig ${path}: user "${String(ctx.user)}" uses an ${user.exec ? 'exec plugin' : 'auth-provider'}, which baton does not run; use a token or a client certificate`);
  }
  let token: K8sConnection['token'];
  if (typeof user.token === 'string' && user.token) token = user.token;
  else if (typeof user.tokenFile === 'string' && user.tokenFile) {
    const file = resolve(base, user.tokenFile);
    token = () => {
      try {
        return readFileSync(file, 'utf8').trim();
      } catch {
        return '';
      }
    };
  }
  const conn: K8sConnection = {
    server: server.replace(/\/+$/, ''),
    ca: data(cluster['certificate-authority-data'], cluster['certificate-authority'], 'certificate-authority'),
    token,
    cert: data(user['client-certificate-data'], user['client-certificate'], 'client-certificate'),
    key: data(user['client-key-data'], user['client-key'], 'client-key'),
    username: typeof user.username === 'string' ? user.username : undefined,
    password: typeof user.password === 'string' ? user.password : undefined,
    insecureSkipTlsVerify: cluster['insecure-skip-tls-verify'] === true,
    tlsServerName: typeof cluster['tls-server-name'] === 'string' ? cluster['tls-server-name'] : undefined,
    namespace: typeof ctx.namespace === 'string' && ctx.namespace ? ctx.namespace : undefined,
    source: `kubeconfig ${path} (context ${contextName})`,
  };
  if (!!conn.cert !== !!conn.key) throw new InvalidConfigError(`k8s: kubeconfig ${path}: user "${String(ctx.user)}" has a client certificate without a key, or a key without a certificate`);
  return conn;
}
