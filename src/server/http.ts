/**
 * The small pieces both of baton's HTTP servers use — the sidecar's (server.ts) and a shard
 * member's (shards-server.ts): JSON answers, health answers, Prometheus text, and binding.
 */
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { HealthStatus } from './health.js';

/** sendJson answers `status` with `body` as one line of JSON, never cached. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }).end(`${JSON.stringify(body)}\n`);
}

/** sendHealth answers 200 or 503 with the status (and reason) of a health check. */
export function sendHealth(res: ServerResponse, h: HealthStatus): void {
  const { ok: _ok, ...body } = h;
  sendJson(res, h.ok ? 200 : 503, body);
}

/** sendMetrics answers with `registry`'s Prometheus text. */
export async function sendMetrics(res: ServerResponse, registry: Registry): Promise<void> {
  const body = await registry.metrics();
  res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }).end(body);
}

/** listenOn binds `server` to `host`:`port` (0 picks a free port) and says where it listens. */
export function listenOn(server: Server, port: number, host: string): Promise<{ url: string; host: string; port: number }> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const a = server.address() as AddressInfo;
      const shown = a.family === 'IPv6' ? `[${a.address}]` : a.address;
      resolve({ url: `http://${shown}:${a.port}`, host: a.address, port: a.port });
    });
  });
}

/** closeServer stops listening and ends open connections. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
