/**
 * Options of the Kubernetes store: what a `k8s://NAMESPACE?…` URL may carry, their defaults and
 * their checks. Where the API server is and how to authenticate is not in the URL: it is
 * resolved the standard way (kubeconfig.ts).
 *
 *   k8s://NAMESPACE                  Leases in NAMESPACE
 *   k8s://                           the namespace of the service account (in a Pod), else of
 *                                    the kubeconfig's context, else "default"
 *   ?context=NAME                    a kubeconfig context other than current-context
 *   ?kubeconfig=PATH                 this kubeconfig file instead of $KUBECONFIG / ~/.kube/config
 *   ?request_timeout=5s              client-side limit per request (default 5 s)
 *   ?watch_timeout=60s               timeoutSeconds of each watch; it is then re-opened (default 60 s)
 */
import { InvalidConfigError } from '../../core/errors.js';
import { parseDuration } from '../../core/duration.js';
import { isNamespaceName } from './names.js';

/** K8sTuning holds the store's own settings. */
export interface K8sTuning {
  /** Namespace of the Leases; undefined: from the service account or the kubeconfig context, else "default". */
  namespace?: string;
  /** kubeconfig context; default its current-context. */
  context?: string;
  /** kubeconfig path; default $KUBECONFIG (its first file), else ~/.kube/config. */
  kubeconfig?: string;
  /** Client-side limit per request. Default 5 s. */
  requestTimeoutMs: number;
  /** timeoutSeconds of each watch request (the server ends it; baton re-watches). Default 60 s. */
  watchTimeoutMs: number;
}

/** DEFAULT_TUNING: request timeout 5 s, watch timeout 60 s. */
export const DEFAULT_TUNING: Readonly<K8sTuning> = Object.freeze({ requestTimeoutMs: 5_000, watchTimeoutMs: 60_000 });

const PARAMS: Record<string, (value: string, t: Partial<K8sTuning>) => void> = {
  context: (v, t) => void (t.context = nonEmpty(v, 'context')),
  kubeconfig: (v, t) => void (t.kubeconfig = nonEmpty(v, 'kubeconfig')),
  request_timeout: (v, t) => void (t.requestTimeoutMs = duration(v, 'request_timeout')),
  watch_timeout: (v, t) => void (t.watchTimeoutMs = duration(v, 'watch_timeout')),
};

/**
 * parseK8sUrl reads `k8s://NAMESPACE?…` (see the header). Unknown options, a bad namespace or
 * a URL with a port, path or credentials are an InvalidConfigError. Defined values in
 * `overrides` (options given in code) win over the URL's.
 */
export function parseK8sUrl(url: URL | string, overrides: Partial<K8sTuning> = {}): K8sTuning {
  let u: URL;
  try {
    u = new URL(String(url));
  } catch {
    throw new InvalidConfigError(`k8s: "${String(url)}" is not a valid URL (expected k8s://NAMESPACE)`);
  }
  if (u.protocol !== 'k8s:') throw new InvalidConfigError(`k8s: "${u.href}" must start with k8s://`);
  if (u.username || u.password || u.port || (u.pathname && u.pathname !== '/')) {
    throw new InvalidConfigError(`k8s: "${u.href}" must be k8s://NAMESPACE (the server and credentials come from the kubeconfig or the service account)`);
  }
  const partial: Partial<K8sTuning> = {};
  if (u.hostname) partial.namespace = u.hostname;
  for (const [key, value] of u.searchParams) {
    const apply = PARAMS[key];
    if (!apply) throw new InvalidConfigError(`k8s: unknown URL option "${key}" (known: ${Object.keys(PARAMS).join(', ')})`);
    apply(value, partial);
  }
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) (partial as Record<string, unknown>)[k] = v;
  return resolveTuning(partial);
}

/** resolveTuning fills defaults and validates. */
export function resolveTuning(partial: Partial<K8sTuning> = {}): K8sTuning {
  const t: K8sTuning = { ...DEFAULT_TUNING };
  for (const [k, v] of Object.entries(partial)) if (v !== undefined) (t as unknown as Record<string, unknown>)[k] = v;
  if (t.namespace !== undefined) validateNamespace(t.namespace);
  for (const key of ['requestTimeoutMs', 'watchTimeoutMs'] as const) {
    if (!Number.isInteger(t[key]) || t[key] <= 0) throw new InvalidConfigError(`k8s: ${key} must be a positive integer, got ${String(t[key])}`);
  }
  if (t.watchTimeoutMs < 1000) throw new InvalidConfigError(`k8s: watch_timeout must be at least 1s (the server counts it in whole seconds), got ${t.watchTimeoutMs}ms`);
  return t;
}

/** validateNamespace checks a namespace name (a DNS-1123 label: 1–63 of a-z, 0-9 and -). */
export function validateNamespace(name: unknown): string {
  if (typeof name !== 'string' || !isNamespaceName(name)) {
    throw new InvalidConfigError(`k8s: namespace "${String(name)}" must be 1–63 characters of a-z, 0-9 and -, starting and ending with a letter or digit`);
  }
  return name;
}

function nonEmpty(value: string, what: string): string {
  if (value.trim() === '') throw new InvalidConfigError(`k8s: ${what}= must not be empty`);
  return value;
}

function duration(value: string, what: string): number {
  const ms = /^\d+$/.test(value) ? Number(value) * 1000 : parseDuration(value, `k8s: ${what}`);
  if (!Number.isFinite(ms) || ms <= 0 || ms > 3_600_000) throw new InvalidConfigError(`k8s: ${what}="${value}" must be a duration above 0 up to 1h, e.g. 5s`);
  return Math.round(ms);
}
