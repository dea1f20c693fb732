/**
 * The sidecar's HTTP server (node:http, no framework): who leads, health, metrics, a guarded
 * step-down, and the live dashboard. Every answer about the served lock comes from the
 * elector's memory; only the dashboard's list of other locks reads the store, and only while
 * someone is watching.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { realClock, type Clock } from '../core/clock.js';
import { errorMessage } from '../core/errors.js';
import type { LeaderElector } from '../core/elector.js';
import type { LeaseStore } from '../core/store.js';
import { instrumentElector } from '../metrics/instrument.js';
import { OwnLeaseWatch } from '../metrics/own-lease.js';
import { bearerToken, tokenMatches } from './auth.js';
import { LockBoard } from './board.js';
import { dashboardPage } from './dashboard/page.js';
import { checkHealth, checkReady } from './health.js';
import { closeServer, listenOn, sendHealth, sendJson as json, sendMetrics } from './http.js';
import { LeaderTracker } from './leader-view.js';
import { silentLogger, type Logger } from './log.js';
import { scrubSecrets } from './redact.js';
import { EventStream } from './sse.js';
import { Timeline } from './timeline.js';
import { shardGroupView } from '../view/shards-view.js';
import { readShardGroup } from '../shards/status.js';
import { candidatesRoute, handoverRoute } from './handover-routes.js';

/** LeaderServerOptions configures createLeaderServer; every field is optional. */
export interface LeaderServerOptions {
  /** Store listed by the dashboard. Default: the elector's store. */
  store?: LeaseStore;
  /** How the store is named on the page and in /api/state; passwords are always hidden. */
  storeLabel?: string;
  /** Registry for /metrics; the elector is instrumented into it. Default: a new Registry. */
  registry?: Registry;
  /** Enables `POST /step-down`, `POST /handover` and `POST /heartbeat` for callers presenting `Authorization: Bearer <token>`. */
  stepDownToken?: string;
  /** /healthz tolerates this long past the renew deadline. Default: the retry period. */
  healthGraceMs?: number;
  /** Timeline entries kept in memory. Default 500. */
  historyLimit?: number;
  /** How often the dashboard's lock list is refreshed while watched. Default 1000 ms. */
  pollIntervalMs?: number;
  /** The elector's clock. Default: the real clock. */
  clock?: Clock;
  /** Where request-level events (step-down, errors) are logged. Default: nowhere. */
  log?: Logger;
  /** Shard groups shown by `GET /shards` and the dashboard (read from the store on each request). */
  shardGroups?: readonly string[];
}

/** LeaderServer is a running (or ready to listen) sidecar server. */
export interface LeaderServer {
  readonly server: Server;
  readonly registry: Registry;
  readonly timeline: Timeline;
  /** listen binds `host` (default 127.0.0.1) and `port` (default 4040; 0 picks a free one). */
  listen(port?: number, host?: string): Promise<{ url: string; host: string; port: number }>;
  /** close ends event streams, stops following the elector and closes the server. */
  close(): Promise<void>;
}

/**
 * createLeaderServer serves, for `elector`:
 * `GET /leader` (JSON, from memory), `GET /healthz`, `GET /readyz`, `GET /metrics`
 * (Prometheus text), `POST /step-down` (403 unless a token is configured; 401 on a wrong one),
 * `POST /heartbeat` (the app's progress report for an elector with progressTimeoutMs; same token),
 * `POST /handover?to=ID` (directed handover, same token: server/handover-routes.ts),
 * `GET /candidates` (the lock's candidate registry and who would be preferred),
 * `GET /` (dashboard), `GET /events` (server-sent events) and `GET /api/state` (snapshot).
 * It does not start or stop the elector.
 */
export function createLeaderServer(elector: LeaderElector, options: LeaderServerOptions = {}): LeaderServer {
  const clock = options.clock ?? realClock;
  const log = options.log ?? silentLogger;
  const registry = options.registry ?? new Registry();
  const storeLabel = scrubSecrets(options.storeLabel ?? elector.store.kind);
  const token = options.stepDownToken;
  const graceMs = options.healthGraceMs ?? elector.timing.retryPeriodMs;
  const instrumentation = instrumentElector(elector, { registry, clock });
  const own = new OwnLeaseWatch(elector, clock);
  const timeline = new Timeline(options.historyLimit ?? 500);
  const tracker = new LeaderTracker(elector, timeline, clock);
  let pending: NodeJS.Timeout | undefined;
  const pushUpdate = () => {
    pending ??= setTimeout(() => {
      pending = undefined;
      stream.send('update', update());
    }, 100);
  };
  const board = new LockBoard(options.store ?? elector.store, tracker, timeline, options.pollIntervalMs ?? 1000, pushUpdate);
  const stream = new EventStream((count) => board.watching(count));
  tracker.onChange(pushUpdate);
  const onEntry = (entry: unknown) => stream.send('timeline', { serverNow: Date.now(), entry });
  timeline.on('entry', onEntry);

  const update = () => ({ serverNow: Date.now(), self: tracker.view(), locks: board.rows(), listError: board.error ?? null });
  const withShards = async <T extends object>(state: T) => (options.shardGroups?.length ? { ...state, shards: await shardViews() } : state);
  const snapshot = () => ({ ...update(), lock: elector.lock, identity: elector.identity, store: storeLabel, timeline: timeline.entries() });

  const handover = handoverRoute(elector, json, log);
  const routes: Record<string, Partial<Record<string, (req: IncomingMessage, res: ServerResponse) => unknown>>> = {
    '/': { GET: (_req, res) => page(res, elector.lock) },
    '/leader': { GET: (_req, res) => json(res, 200, tracker.view()) },
    '/healthz': { GET: (_req, res) => sendHealth(res, checkHealth(elector, own, graceMs)) },
    '/readyz': { GET: (_req, res) => sendHealth(res, checkReady(tracker.ready)) },
    '/metrics': { GET: (_req, res) => sendMetrics(res, registry) },
    '/api/state': {
      GET: async (_req, res) => {
        // A slow store delays a polling dashboard by a second at most; it gets the last listing.
        await Promise.race([board.refresh(), new Promise((r) => setTimeout(r, 1000).unref())]);
        json(res, 200, await withShards(snapshot()));
      },
    },
    // The stream opens at once; the first listing follows as an `update` (see LockBoard.watching).
    '/events': { GET: (req, res) => stream.open(req, res, [{ event: 'snapshot', data: snapshot() }]) },
    '/step-down': { POST: (req, res) => stepDown(req, res) },
    '/handover': { POST: (req, res) => authorized(req, res, 'handover') && handover(req, res) },
    '/candidates': { GET: candidatesRoute(elector, json) },
    '/heartbeat': { POST: (req, res) => heartbeat(req, res) },
    '/shards': { GET: async (_req, res) => json(res, 200, await shardViews()) },
  };

  /** shardViews reads every configured shard group; a group that cannot be read says why. */
  async function shardViews(): Promise<unknown[]> {
    const store = options.store ?? elector.store;
    return Promise.all(
      (options.shardGroups ?? []).map(async (group) => {
        try {
          return shardGroupView(await readShardGroup(store, group), { serverExpiry: store.capabilities.serverExpiry });
        } catch (err) {
          return { group, error: errorMessage(err) };
        }
      }),
    );
  }

  /** authorized answers 403 / 401 and returns false unless the request carries the token. */
  function authorized(req: IncomingMessage, res: ServerResponse, what: 'step-down' | 'heartbeat' | 'handover'): boolean {
    req.resume();
    if (token === undefined) {
      json(res, 403, { error: `${what} is disabled: configure a token (--step-down-token-file FILE or BATON_STEP_DOWN_TOKEN)` });
      return false;
    }
    if (!tokenMatches(bearerToken(req), token)) {
      log('warn', `${what}-refused`, `refused a ${what} request from ${req.socket.remoteAddress}: missing or wrong token`, { lock: elector.lock });
      res.setHeader('www-authenticate', 'Bearer realm="baton"');
      json(res, 401, { error: 'missing or wrong token (send Authorization: Bearer <token>)' });
      return false;
    }
    return true;
  }

  /** heartbeat: the app reports progress; with progressTimeoutMs, silence steps the elector down ('hung'). */
  async function heartbeat(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!authorized(req, res, 'heartbeat')) return;
    const term = elector.term;
    if (term === undefined) {
      const seen = elector.leader();
      return json(res, 409, { accepted: false, error: 'this instance is not the leader', lock: elector.lock, holder: seen?.holder ?? null, term: seen?.term ?? 0 });
    }
    (await elector.elected()).heartbeat();
    return json(res, 200, { accepted: true, lock: elector.lock, term });
  }

  async function stepDown(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!authorized(req, res, 'step-down')) return;
    const term = elector.term;
    if (term === undefined) {
      const seen = elector.leader();
      return json(res, 409, { steppedDown: false, error: 'this instance is not the leader', lock: elector.lock, holder: seen?.holder ?? null, term: seen?.term ?? 0 });
    }
    log('info', 'step-down', `stepping down from "${elector.lock}" (term ${term}) on request`, { lock: elector.lock, term });
    await elector.resign();
    return json(res, 200, { steppedDown: true, lock: elector.lock, identity: elector.identity, term });
  }

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const route = routes[path];
    const method = req.method === 'HEAD' ? 'GET' : req.method ?? 'GET';
    const handler = route?.[method];
    res.setHeader('x-content-type-options', 'nosniff');
    if (!route) return json(res, 404, { error: `no such endpoint: ${path}` });
    if (!handler) {
      res.setHeader('allow', Object.keys(route).join(', '));
      return json(res, 405, { error: `${req.method} is not allowed on ${path}` });
    }
    Promise.resolve()
      .then(() => handler(req, res))
      .catch((err) => {
        log('error', 'http-error', `${req.method} ${path} failed: ${errorMessage(err)}`, { path });
        if (!res.headersSent) json(res, 500, { error: scrubSecrets(errorMessage(err)) });
        else res.end();
      });
  });

  return {
    server,
    registry,
    timeline,
    listen(port = 4040, host = '127.0.0.1') {
      return listenOn(server, port, host);
    },
    async close() {
      if (pending) clearTimeout(pending);
      stream.close();
      board.close();
      tracker.close();
      own.close();
      timeline.off('entry', onEntry);
      instrumentation.close();
      await closeServer(server);
    },
  };
}

function page(res: ServerResponse, lock: string): void {
  const nonce = randomBytes(16).toString('base64');
  res.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    'referrer-policy': 'no-referrer',
  });
  res.end(dashboardPage(nonce, lock));
}
