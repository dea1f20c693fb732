/**
 * Server-side request counters: what a store server itself says it was asked to do, so the
 * bench never relies on baton's own accounting for load figures.
 *
 * - Redis: the server's MONITOR feed, counting each command a client sent by name. INFO
 *   commandstats cannot be used for this: it also counts every command a Lua script runs (one
 *   baton write is one EVALSHA but five or six commandstats calls). MONITOR costs the server a
 *   little, so it runs only inside a counting session, never while latencies are timed.
 * - PostgreSQL: `pg_stat_statements` (calls per normalized statement, LISTEN included since
 *   track_utility is on), optionally for one role only; the bench's own reads are left out.
 * - etcd: `/metrics` `grpc_server_msg_received_total` per gRPC method — a unary call is one
 *   message, and every message on a stream (a lease keepalive, a watch create) is one more.
 */
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { Client } from 'pg';

const require = createRequire(import.meta.url);

/** Counts are cumulative request counts by kind (command, statement or gRPC method). */
export type Counts = Map<string, number>;

/** CountDelta is the difference between two snapshots. */
export interface CountDelta {
  total: number;
  byKind: Record<string, number>;
}

/** CountSession reads cumulative counts while it is open. */
export interface CountSession {
  snapshot(scope?: { role?: string }): Promise<Counts>;
  end(): Promise<void>;
}

/** ServerCounter reads a server's own request counters, inside a session. */
export interface ServerCounter {
  /** What is counted, for the report. */
  readonly source: string;
  /** Whether `snapshot({ role })` can count one client role apart (PostgreSQL). */
  readonly perRole: boolean;
  begin(): Promise<CountSession>;
  close(): Promise<void>;
}

/** diffCounts subtracts snapshot `a` from `b`, keeping kinds that changed. */
export function diffCounts(a: Counts, b: Counts): CountDelta {
  const byKind: Record<string, number> = {};
  let total = 0;
  for (const [k, v] of b) {
    const d = v - (a.get(k) ?? 0);
    if (d !== 0) {
      byKind[k] = d;
      total += d;
    }
  }
  return { total, byKind };
}

/** subtractDeltas is `b − a` kind by kind (for differential measurements). */
export function subtractDeltas(b: CountDelta, a: CountDelta): CountDelta {
  const byKind: Record<string, number> = { ...b.byKind };
  for (const [k, v] of Object.entries(a.byKind)) byKind[k] = (byKind[k] ?? 0) - v;
  for (const k of Object.keys(byKind)) if (byKind[k] === 0) delete byKind[k];
  return { total: b.total - a.total, byKind };
}

/** withSession runs `fn` inside a counting session and always ends it. */
export async function withSession<T>(counter: ServerCounter, fn: (session: CountSession) => Promise<T>): Promise<T> {
  const session = await counter.begin();
  try {
    return await fn(session);
  } finally {
    await session.end();
  }
}

function connectRedis(url: string, name: string): Redis {
  const { Redis: IORedis } = require('ioredis') as { Redis: new (url: string, o: object) => Redis };
  return new IORedis(url, { connectionName: name });
}

/**
 * redisCounter counts client-sent commands from a MONITOR feed. A snapshot first sends a unique
 * ECHO on another connection and waits for the feed to show it: Redis runs commands one at a
 * time and the feed keeps their order, so everything executed before the snapshot was asked
 * for has been counted by then.
 */
export async function redisCounter(url: string): Promise<ServerCounter> {
  const control = connectRedis(url, 'bench-counter');
  return {
    source: 'Redis MONITOR feed (commands clients sent; commands run inside Lua scripts excluded)',
    perRole: false,
    async begin() {
      const counts: Counts = new Map();
      const marks = new Map<string, () => void>();
      // A connection in monitor mode from the start (what ioredis's monitor() builds), so the
      // listeners are in place before the first line: lines that arrive in the same chunk as
      // MONITOR's OK, or after the feed is closed, make ioredis emit 'error'; they are before
      // the first mark or after the last one, so they never fall inside a counted window.
      const { Redis: IORedis } = require('ioredis') as { Redis: new (url: string, o: object) => Redis };
      const monitor = new IORedis(url, { monitor: true, lazyConnect: false });
      monitor.on('error', () => {});
      const monitoring = new Promise<void>((resolve) => monitor.once('monitoring', () => resolve()));
      monitor.on('monitor', (_time: string, args: string[], source: string) => {
        const cmd = String(args[0] ?? '').toLowerCase();
        if (cmd === 'echo' && marks.has(String(args[1]))) {
          marks.get(String(args[1]))!();
          return;
        }
        if (source === 'lua' || cmd === 'info' || cmd === 'echo') return;
        counts.set(cmd, (counts.get(cmd) ?? 0) + 1);
      });
      await monitoring;
      let serial = 0;
      const flush = async () => {
        const mark = `bench-mark-${process.pid}-${serial++}`;
        const seen = new Promise<void>((resolve) => marks.set(mark, resolve));
        await control.echo(mark);
        await seen;
        marks.delete(mark);
      };
      await flush();
      return {
        async snapshot() {
          await flush();
          return new Map(counts);
        },
        async end() {
          monitor.disconnect();
        },
      };
    },
    async close() {
      control.disconnect();
    },
  };
}

/** postgresCounter reads pg_stat_statements (creating the extension; the harness preloads it). */
export async function postgresCounter(url: string): Promise<ServerCounter> {
  const pg = require('pg') as typeof import('pg');
  const client: Client = new pg.Client({ connectionString: url, application_name: 'bench-counter' });
  await client.connect();
  await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  const snapshot = async (scope: { role?: string } = {}): Promise<Counts> => {
    const { rows } = await client.query<{ q: string; n: string }>(
      `SELECT left(regexp_replace(s.query, '\\s+', ' ', 'g'), 60) AS q, sum(s.calls)::bigint AS n
         FROM pg_stat_statements s
        WHERE s.query NOT ILIKE '%pg_stat_statements%'
          AND ($1::text IS NULL OR s.userid = (SELECT oid FROM pg_roles WHERE rolname = $1))
        GROUP BY 1`,
      [scope.role ?? null],
    );
    return new Map(rows.map((r) => [r.q, Number(r.n)]));
  };
  return {
    source: 'PostgreSQL pg_stat_statements (calls per statement; the bench’s own queries excluded)',
    perRole: true,
    async begin() {
      return { snapshot, end: async () => {} };
    },
    async close() {
      await client.end();
    },
  };
}

/** etcdCounter reads grpc_server_msg_received_total from the member's /metrics. */
export async function etcdCounter(endpoint: string): Promise<ServerCounter> {
  const snapshot = async (): Promise<Counts> => {
    const text = await (await fetch(`${endpoint}/metrics`)).text();
    const counts: Counts = new Map();
    for (const m of text.matchAll(/^grpc_server_msg_received_total\{[^}]*grpc_method="([^"]+)"[^}]*\} (\S+)$/gm)) {
      const n = Number(m[2]);
      if (n > 0) counts.set(m[1]!, (counts.get(m[1]!) ?? 0) + n);
    }
    return counts;
  };
  return {
    source: 'etcd /metrics grpc_server_msg_received_total (gRPC messages per method: unary calls and stream messages)',
    perRole: false,
    async begin() {
      return { snapshot, end: async () => {} };
    },
    async close() {},
  };
}

/**
 * azuriteCounter counts the HTTP requests that reach azurite, at a counting reverse proxy the
 * store URL points to (azurite has no request counters of its own, and Azure bills per request
 * too). A request's kind is its method and `comp`, with the lease action for lease calls:
 * "GET blob", "PUT blob", "PUT lease:renew"…
 */
export async function azuriteCounter(targetPort: number): Promise<ServerCounter & { readonly port: number }> {
  const http = await import('node:http');
  const counts: Counts = new Map();
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer((req, res) => {
    const comp = new URL(req.url ?? '/', 'http://x').searchParams.get('comp');
    const action = req.headers['x-ms-lease-action'];
    const kind = `${req.method} ${comp ?? 'blob'}${action ? `:${String(action)}` : ''}`;
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
    const upstream = http.request({ host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers: req.headers, agent }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    source: 'HTTP requests reaching azurite, counted at a reverse proxy in front of it (method, comp, lease action)',
    perRole: false,
    async begin() {
      return { snapshot: async () => new Map(counts), end: async () => {} };
    },
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      agent.destroy();
    },
  };
}

/**
 * natsCounter reads nats-server's monitoring endpoint: `/varz` `in_msgs` (every message clients
 * sent: KV writes are publishes, reads and watch set-ups are JetStream API requests) split by
 * `/jsz` `api.total` into JetStream API requests and the other messages (KV writes, flow-control
 * replies). PINGs are not messages and are not counted.
 */
export async function natsCounter(monitorEndpoint: string): Promise<ServerCounter> {
  const snapshot = async (): Promise<Counts> => {
    const varz = (await (await fetch(`${monitorEndpoint}/varz`)).json()) as { in_msgs?: number };
    const jsz = (await (await fetch(`${monitorEndpoint}/jsz`)).json()) as { api?: { total?: number } };
    const api = jsz.api?.total ?? 0;
    return new Map([
      ['JetStream API requests', api],
      ['other client messages (KV writes, flow control)', Math.max(0, (varz.in_msgs ?? 0) - api)],
    ]);
  };
  return {
    source: 'nats-server /varz in_msgs, split by /jsz api.total (messages received from clients)',
    perRole: false,
    async begin() {
      return { snapshot, end: async () => {} };
    },
    async close() {},
  };
}

/**
 * mysqlCounter reads MySQL/MariaDB `SHOW GLOBAL STATUS` statement counters (Com_select,
 * Com_insert, Com_update, Com_update_multi, Com_delete): the statements clients ran, counted by
 * the server (an UPDATE that joins another table, as the renewal-only batch does, counts as
 * Com_update_multi). The counter's own SHOW is a Com_show_status and is left out.
 */
export async function mysqlCounter(url: string): Promise<ServerCounter> {
  const mysql = require('mysql2/promise') as typeof import('mysql2/promise');
  const connection = await mysql.createConnection(url.replace(/^mariadb:/, 'mysql:'));
  const kinds = ['Com_select', 'Com_insert', 'Com_update', 'Com_update_multi', 'Com_delete'];
  const snapshot = async (): Promise<Counts> => {
    const [rows] = (await connection.query(`SHOW GLOBAL STATUS WHERE Variable_name IN (${kinds.map(() => '?').join(', ')})`, kinds)) as unknown as [
      { Variable_name: string; Value: string }[],
    ];
    return new Map(rows.map((r) => [r.Variable_name, Number(r.Value)]));
  };
  return {
    source: 'MySQL/MariaDB SHOW GLOBAL STATUS Com_select/Com_insert/Com_update/Com_update_multi/Com_delete (statements run by clients)',
    perRole: false,
    async begin() {
      return { snapshot, end: async () => {} };
    },
    async close() {
      await connection.end().catch(() => {});
    },
  };
}

/**
 * dynaliteCounter reads the request counts the dynalite process keeps by DynamoDB operation
 * (infra/servers/dynalite-main.mjs): every HTTP request the server received, which is what
 * DynamoDB bills and throttles per call. The bench's own probes go to the same server, so the
 * idle measurement is differential, as for etcd.
 */
export async function dynaliteCounter(statsUrl: string): Promise<ServerCounter> {
  const snapshot = async (): Promise<Counts> => {
    const body = (await (await fetch(statsUrl)).json()) as Record<string, number>;
    return new Map(Object.entries(body).filter(([, n]) => n > 0));
  };
  return {
    source: 'dynalite request counter (API calls received, by X-Amz-Target operation, counted in the server process)',
    perRole: false,
    async begin() {
      return { snapshot, end: async () => {} };
    },
    async close() {},
  };
}

/**
 * dynamoProxyCounter counts the DynamoDB API calls that reach a server with no counters of its
 * own (moto), at a counting reverse proxy the store URL points to, by X-Amz-Target operation
 * ("PutItem", "TransactWriteItems", "GetItem"…), as dynalite's own counter does.
 */
export async function dynamoProxyCounter(targetPort: number, server: string): Promise<ServerCounter & { readonly port: number }> {
  const http = await import('node:http');
  const counts: Counts = new Map();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const proxy = http.createServer((req, res) => {
    const kind = String(req.headers['x-amz-target'] ?? 'other').split('.').pop() ?? 'other';
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
    const upstream = http.request({ host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers: req.headers, agent }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const port = (proxy.address() as { port: number }).port;
  return {
    port,
    source: `DynamoDB API calls reaching ${server}, counted by X-Amz-Target operation at a reverse proxy in front of it`,
    perRole: false,
    async begin() {
      return { snapshot: async () => new Map(counts), end: async () => {} };
    },
    async close() {
      proxy.closeAllConnections();
      await new Promise((r) => proxy.close(r));
      agent.destroy();
    },
  };
}

/** k8sCounter reads the API server's own request counts (KubeApiServer.requestTotals: apiserver_request_total). */
export async function k8sCounter(counts: () => Promise<Record<string, number>>): Promise<ServerCounter> {
  const snapshot = async (): Promise<Counts> => new Map(Object.entries(await counts()));
  await snapshot(); // fails here, at start, if the server has no counter
  return {
    source: 'kube-apiserver apiserver_request_total{resource="leases"} by verb (a watch counts when it ends; includes the server\'s own identity Lease, 0.1 updates/s)',
    perRole: false,
    async begin() {
      return { snapshot, end: async () => {} };
    },
    async close() {},
  };
}

/**
 * zooKeeperCounter reads zk_packets_received from the `mntr` four-letter word: every request a
 * client sends (reads, writes, multis, watches set, and session pings). The `mntr` request
 * itself counts as one packet, which each snapshot takes off again.
 */
export async function zooKeeperCounter(port: number): Promise<ServerCounter> {
  const { fourLetter } = await import('../infra/servers/index.js');
  let own = 0;
  const snapshot = async (): Promise<Counts> => {
    const text = await fourLetter(port, 'mntr');
    own++;
    const n = Number(/^zk_packets_received\s+(\d+)$/m.exec(text)?.[1] ?? NaN);
    if (!Number.isFinite(n)) throw new Error(`zookeeper mntr on ${port} has no zk_packets_received`);
    return new Map([['packets', n - own]]);
  };
  return {
    source: 'ZooKeeper mntr zk_packets_received (client requests, pings included)',
    perRole: false,
    async begin() {
      return { snapshot, end: async () => {} };
    },
    async close() {},
  };
}
