/**
 * KubeClient is the store's thin client for the Kubernetes API: JSON over node:https (node:http
 * for an http:// server such as `kubectl proxy`) with a keep-alive agent, the cluster's CA, a
 * bearer token, basic auth or a client certificate. No SDK: @kubernetes/client-node 1.x/2.x pulls
 * in ~16 packages (undici 8 among them, which needs Node ≥ 22.19) for the four verbs used here.
 *
 * Every failure to get an answer (refused, reset, TLS, timeout) is a StoreUnavailableError with
 * one line naming the server; an answer, whatever its status, is returned to the caller.
 */
import http from 'node:http';
import https from 'node:https';
import { StoreUnavailableError, errorMessage } from '../../core/errors.js';
import type { K8sConnection } from './kubeconfig.js';

/** KubeResponse is a status code and the parsed JSON body (undefined if the body was not JSON). */
export interface KubeResponse {
  status: number;
  body: Record<string, unknown> | undefined;
}

/** WatchEvent is one line of a watch stream. */
export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: Record<string, unknown>;
}

/** KubeClient: see the header comment. */
export class KubeClient {
  /** The server's URL (no credentials), for messages. */
  readonly where: string;
  private readonly base: URL;
  private readonly agent: http.Agent;
  private readonly transport: typeof http | typeof https;
  private closed = false;

  constructor(private readonly conn: K8sConnection, private readonly requestTimeoutMs: number) {
    this.base = new URL(conn.server);
    this.where = this.base.origin;
    const secure = this.base.protocol === 'https:';
    this.transport = secure ? https : http;
    this.agent = secure
      ? new https.Agent({
          keepAlive: true,
          ca: conn.ca,
          cert: conn.cert,
          key: conn.key,
          rejectUnauthorized: !conn.insecureSkipTlsVerify,
          servername: conn.tlsServerName,
        })
      : new http.Agent({ keepAlive: true });
  }

  /**
   * request sends one request and resolves with the answer; no answer in time →
   * StoreUnavailableError. A 429 (the API server's max-in-flight limit or API Priority and
   * Fairness shedding load) is sent again after its Retry-After (1 s if none), as long as that
   * fits in the request timeout counted from the first send; otherwise the 429 is the answer
   * (the store turns it into StoreUnavailableError: throttled, never a lost race). Sending again
   * is safe: a throttled request was not executed.
   */
  async request(method: string, path: string, body?: unknown): Promise<KubeResponse> {
    const until = performance.now() + this.requestTimeoutMs;
    for (;;) {
      const res = await this.requestOnce(method, path, body, Math.max(1, until - performance.now()));
      if (res.status !== 429) return res;
      const waitMs = retryAfterMs(res.retryAfter);
      if (performance.now() + waitMs >= until) return res;
      await new Promise((r) => setTimeout(r, waitMs));
    }
  }

  private requestOnce(method: string, path: string, body: unknown, timeoutMs: number): Promise<KubeResponse & { retryAfter?: string }> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const req = this.transport.request(this.url(path), {
        method,
        agent: this.agent,
        headers: this.headers(payload),
        timeout: timeoutMs,
      });
      // The timeout covers the whole exchange, not just idle sockets: a frozen server must not hang a call.
      const timer = setTimeout(() => req.destroy(new Error(`no answer within ${this.requestTimeoutMs}ms`)), timeoutMs);
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.requestTimeoutMs}ms`)));
      req.on('error', (err) => {
        clearTimeout(timer);
        reject(this.unavailable(err, method, path));
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (err) => {
          clearTimeout(timer);
          reject(this.unavailable(err, method, path));
        });
        res.on('end', () => {
          clearTimeout(timer);
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: Record<string, unknown> | undefined;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = undefined;
          }
          const retryAfter = res.headers['retry-after'];
          resolve({ status: res.statusCode ?? 0, body: parsed, ...(retryAfter !== undefined ? { retryAfter } : {}) });
        });
      });
      req.end(payload);
    });
  }

  /**
   * watch opens a watch stream and calls `onEvent` for each event. It resolves when the server
   * ends the stream (timeoutSeconds) and rejects on a failure, on a non-200 answer, or when
   * nothing arrives for `idleMs` (a frozen server or a silently dead connection). `onOpen` is
   * called once the server has answered 200. Aborting `signal` ends it quietly.
   */
  watch(path: string, idleMs: number, signal: AbortSignal, onOpen: () => void, onEvent: (event: WatchEvent) => void): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return resolve();
      const req = this.transport.request(this.url(path), { method: 'GET', agent: this.agent, headers: this.headers() });
      let idle: NodeJS.Timeout | undefined;
      let settled = false;
      const finish = (err?: unknown, raw = false) => {
        if (settled) return;
        settled = true;
        clearTimeout(idle);
        signal.removeEventListener('abort', onAbort);
        req.destroy();
        if (err && !signal.aborted) reject(raw || err instanceof StoreUnavailableError ? err : this.unavailable(err, 'WATCH', path));
        else resolve();
      };
      const arm = () => {
        clearTimeout(idle);
        idle = setTimeout(() => finish(new Error(`watch silent for ${idleMs}ms`)), idleMs);
        idle.unref();
      };
      const onAbort = () => finish();
      signal.addEventListener('abort', onAbort);
      arm();
      req.on('socket', (s) => s.unref()); // a watch alone should not keep a process alive
      req.on('error', (err) => finish(err));
      req.on('response', (res) => {
        if (res.statusCode !== 200) {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            // Refused for good (credentials, RBAC): the caller decides what that means.
            if (status === 401 || status === 403) return finish(new WatchRefusedError({ status, body: parseBody(chunks) }), true);
            finish(new StoreUnavailableError(`k8s: ${this.where}: watch answered ${status}: ${statusMessage(chunks)}`));
          });
          res.on('error', (err) => finish(err));
          return;
        }
        onOpen();
        let buffered = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          arm();
          buffered += chunk;
          for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
            const line = buffered.slice(0, nl).trim();
            buffered = buffered.slice(nl + 1);
            if (!line) continue;
            let event: WatchEvent;
            try {
              event = JSON.parse(line);
            } catch {
              return finish(new Error('watch sent a line that is not JSON'));
            }
            try {
              onEvent(event);
            } catch (err) {
              return finish(err, true); // the caller's own verdict (e.g. 410 Gone), as it is
            }
          }
        });
        res.on('end', () => finish());
        res.on('error', (err) => finish(err));
        res.on('aborted', () => finish(new Error('watch stream aborted')));
      });
      req.end();
    });
  }

  /** close drops the keep-alive sockets. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.agent.destroy();
  }

  private url(path: string): URL {
    return new URL(this.base.pathname.replace(/\/+$/, '') + path, this.base);
  }

  private headers(payload?: Buffer): http.OutgoingHttpHeaders {
    const h: http.OutgoingHttpHeaders = { accept: 'application/json', 'user-agent': 'baton' };
    const token = typeof this.conn.token === 'function' ? this.conn.token() : this.conn.token;
    if (token) h.authorization = `Bearer ${token}`;
    else if (this.conn.username !== undefined) h.authorization = `Basic ${Buffer.from(`${this.conn.username}:${this.conn.password ?? ''}`).toString('base64')}`;
    if (payload) {
      h['content-type'] = 'application/json';
      h['content-length'] = payload.length;
    }
    return h;
  }

  private unavailable(err: unknown, method: string, path: string): StoreUnavailableError {
    const e = err as { code?: string } | null;
    let text = err instanceof AggregateError && !err.message ? [...new Set(err.errors.map((x) => errorMessage(x)))].join('; ') : errorMessage(err);
    if (!text && e?.code) text = e.code;
    return new StoreUnavailableError(`k8s: ${this.where}: ${method} ${path.split('?')[0]}: ${text || 'connection failed'}`, { cause: err });
  }
}

/** retryAfterMs reads a Retry-After header in seconds (the API server's form), 1 s if absent or odd, at most 10 s. */
function retryAfterMs(header: string | undefined): number {
  const seconds = Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? Math.min(seconds, 10) * 1000 : 1000;
}

/** WatchRefusedError is a watch the server answered 401 or 403 (see LeaseWatch). */
export class WatchRefusedError extends Error {
  constructor(readonly response: KubeResponse) {
    super(`watch answered ${response.status}`);
    this.name = 'WatchRefusedError';
  }
}

function parseBody(chunks: Buffer[]): Record<string, unknown> | undefined {
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** statusMessage reads the message of a Status body, for errors. */
export function statusMessage(body: Buffer[] | Record<string, unknown> | undefined): string {
  let b: Record<string, unknown> | undefined;
  if (Array.isArray(body)) {
    try {
      b = JSON.parse(Buffer.concat(body).toString('utf8'));
    } catch {
      return Buffer.concat(body).toString('utf8').slice(0, 200).replace(/\s+/g, ' ');
    }
  } else b = body;
  const message = typeof b?.message === 'string' ? b.message : '';
  const reason = typeof b?.reason === 'string' ? b.reason : '';
  return [reason, message].filter(Boolean).join(': ') || 'no message';
}
