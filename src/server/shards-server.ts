/**
 * A shard group member's HTTP listener (`baton shards --listen`): `GET /metrics` and
 * `GET /healthz`, nothing else. Every answer comes from the member's memory.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import { Registry } from 'prom-client';
import { realClock, type Clock } from '../core/clock.js';
import type { LeaderElector } from '../core/elector.js';
import { errorMessage } from '../core/errors.js';
import { instrumentShardGroup } from '../metrics/shard-group.js';
import { OwnLeaseWatch } from '../metrics/own-lease.js';
import type { ShardAcquiredEvent, ShardGroup } from '../shards/group.js';
import { checkHealth, type HealthStatus } from './health.js';
import { closeServer, listenOn, sendHealth, sendJson, sendMetrics } from './http.js';

/** ShardMemberServerOptions: every field is optional. */
export interface ShardMemberServerOptions {
  /** Registry for /metrics; the group is instrumented into it (metrics/shard-group.ts). Default: a new Registry. */
  registry?: Registry;
  /** /healthz tolerates this long past a shard's renew deadline. Default: the retry period. */
  healthGraceMs?: number;
  /** The group's clock. Default: the real clock. */
  clock?: Clock;
}

/** ShardMemberServer is a shard member's listener, ready to listen. */
export interface ShardMemberServer {
  readonly server: Server;
  readonly registry: Registry;
  /** listen binds `host` and `port` (0 picks a free one). */
  listen(port: number, host: string): Promise<{ url: string; host: string; port: number }>;
  /** close stops following the group and closes the server. */
  close(): Promise<void>;
}

/**
 * createShardMemberServer serves, for one member of `group`: `GET /metrics` (Prometheus text:
 * per shard, whether this member owns it, its step-downs by reason and the last one's reason
 * and note, and its hung-work exclusion) and `GET /healthz` — the sidecar's rule applied to
 * every shard: 503 while a shard's lease still names this member but was last confirmed more
 * than renew deadline + grace ago (the member cannot reach the store, or its timers stalled);
 * 200 otherwise, a member that owns nothing included. It does not start or stop the group.
 */
export function createShardMemberServer(group: ShardGroup, options: ShardMemberServerOptions = {}): ShardMemberServer {
  const clock = options.clock ?? realClock;
  const registry = options.registry ?? new Registry();
  const graceMs = options.healthGraceMs ?? group.timing.retryPeriodMs;
  const instrumentation = instrumentShardGroup(group, { registry });
  // One watch per shard, made when this member takes it (its elector is then the shard's).
  const watches = new Map<number, { elector: LeaderElector; own: OwnLeaseWatch }>();
  const onAcquired = ({ shard }: ShardAcquiredEvent) => {
    const elector = group.electorOf(shard);
    if (!elector) return;
    watches.get(shard)?.own.close();
    watches.set(shard, { elector, own: new OwnLeaseWatch(elector, clock) });
  };
  group.on('acquired', onAcquired);
  const health = (): HealthStatus => {
    for (const [shard, { elector, own }] of watches) {
      // The group has let this elector go: the shard was given up (its release is its end).
      if (group.electorOf(shard) !== elector) {
        own.close();
        watches.delete(shard);
        continue;
      }
      const h = checkHealth(elector, own, graceMs);
      if (!h.ok) return h;
    }
    return { ok: true, status: 'ok' };
  };
  const routes: Record<string, (res: ServerResponse) => unknown> = {
    '/metrics': (res) => sendMetrics(res, registry),
    '/healthz': (res) => sendHealth(res, health()),
  };
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    res.setHeader('x-content-type-options', 'nosniff');
    const route = routes[path];
    if (!route) return sendJson(res, 404, { error: `no such endpoint: ${path} (a shard member serves /metrics and /healthz)` });
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET');
      return sendJson(res, 405, { error: `${req.method} is not allowed on ${path}` });
    }
    Promise.resolve()
      .then(() => route(res))
      .catch((err) => {
        if (!res.headersSent) sendJson(res, 500, { error: errorMessage(err) });
        else res.end();
      });
  });
  return {
    server,
    registry,
    listen: (port, host) => listenOn(server, port, host),
    async close() {
      group.off('acquired', onAcquired);
      for (const w of watches.values()) w.own.close();
      watches.clear();
      instrumentation.close();
      await closeServer(server);
    },
  };
}
