/**
 * The CLI's OTLP/HTTP (JSON) export, received by an OTLP receiver on loopback: a node http
 * server in this test that accepts `POST /v1/traces` and `/v1/metrics` and decodes the JSON, as
 * a collector does. Two real `baton run` candidates on SQLite: the first leads until an operator
 * asks it to step down (`baton release`), the second then leads until SIGTERM. Checked: one span
 * per term with its lock, term, identity, store and stop reason, the step-down event, the leader
 * gauge from both; and a protocol baton cannot speak refused with one line and exit 78.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { BatonProcess, TempDir, cleanEnv, runCli, waitFor } from '../harness/cli.js';

type KeyValue = { key: string; value: { stringValue?: string; intValue?: string } };
interface Span {
  name: string;
  traceId: string;
  spanId: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: KeyValue[];
  events: Array<{ name: string; attributes: KeyValue[] }>;
  status: { code: number };
}
interface Point {
  attributes: KeyValue[];
  asInt: string;
}

const dir = new TempDir();
const posts: Array<{ path: string; body: any }> = [];
const server = createServer((req: IncomingMessage, res) => {
  let text = '';
  req.on('data', (b: Buffer) => (text += b.toString()));
  req.on('end', () => {
    const ok = req.method === 'POST' && req.headers['content-type'] === 'application/json' && (req.url === '/v1/traces' || req.url === '/v1/metrics');
    if (ok) posts.push({ path: req.url!, body: JSON.parse(text) });
    res.writeHead(ok ? 200 : 400, { 'content-type': 'application/json' }).end('{}');
  });
});
let endpoint = '';
before(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
const started: BatonProcess[] = [];
after(async () => {
  await Promise.all(started.map((p) => p.kill()));
  server.close();
  dir.remove();
});

const attr = (kvs: KeyValue[], key: string) => {
  const v = kvs.find((a) => a.key === key)?.value;
  return v?.stringValue ?? (v?.intValue !== undefined ? Number(v.intValue) : undefined);
};
const spans = (): Span[] => posts.filter((p) => p.path === '/v1/traces').flatMap((p) => p.body.resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((s: any) => s.spans)));
const points = (name: string): Point[] =>
  posts
    .filter((p) => p.path === '/v1/metrics')
    .flatMap((p) => p.body.resourceMetrics.flatMap((r: any) => r.scopeMetrics.flatMap((s: any) => s.metrics.filter((m: any) => m.name === name).flatMap((m: any) => m.gauge.dataPoints))));
const statusOf = (identity: string) => points('baton.leader.status').filter((p) => attr(p.attributes, 'baton.identity') === identity).map((p) => Number(p.asInt));

test('baton run exports a span per term, the step-down event and the leader gauge over OTLP/HTTP JSON', async () => {
  const store = dir.sqlite('otel.db');
  const env = cleanEnv(dir.path, {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_METRIC_EXPORT_INTERVAL: '200',
    OTEL_SERVICE_NAME: 'reports',
  });
  const timing = ['--lease-duration', '1s', '--renew-deadline', '600ms', '--retry-period', '100ms'];
  const a = new BatonProcess(['run', '--store', store, '--lock', 'otel', '--identity', 'a', ...timing, '--', 'sleep', '30'], { env });
  started.push(a);
  await waitFor('a to report itself leading', () => statusOf('a').includes(1), 20_000, 50);
  const b = new BatonProcess(['run', '--store', store, '--lock', 'otel', '--identity', 'b', ...timing, '--', 'sleep', '30'], { env });
  started.push(b);
  await waitFor('b to report itself a standby', () => statusOf('b').includes(0), 20_000, 50);

  const release = await runCli(['release', '--store', store, '--lock', 'otel', '--timeout', '10s'], { env: cleanEnv(dir.path), timeoutMs: 20_000 });
  assert.equal(release.code, 0, release.stderr);
  const aEnd = await a.waitForExit(20_000);
  assert.equal(aEnd.code, 75, `a stepped down: ${aEnd.stderr}`);
  await waitFor('b to report itself leading', () => statusOf('b').includes(1), 20_000, 50);
  b.signal('SIGTERM');
  await b.waitForExit(20_000);

  // Each process sent its last exports before it exited.
  const byTerm = new Map(spans().map((s) => [attr(s.attributes, 'baton.term'), s]));
  const first = byTerm.get(1);
  const second = byTerm.get(2);
  assert.ok(first && second, `spans for terms 1 and 2: ${JSON.stringify(spans().map((s) => s.attributes))}`);
  for (const [s, identity] of [[first, 'a'], [second, 'b']] as const) {
    assert.equal(s.name, 'baton.leadership');
    assert.match(s.traceId, /^[0-9a-f]{32}$/);
    assert.match(s.spanId, /^[0-9a-f]{16}$/);
    assert.equal(attr(s.attributes, 'baton.lock'), 'otel');
    assert.equal(attr(s.attributes, 'baton.identity'), identity);
    assert.equal(attr(s.attributes, 'baton.store'), store);
    assert.ok(BigInt(s.endTimeUnixNano) > BigInt(s.startTimeUnixNano), 'the span lasts the term');
  }
  assert.equal(attr(first.attributes, 'baton.stop_reason'), 'step-down-requested');
  assert.equal(attr(second.attributes, 'baton.stop_reason'), 'stopped');
  assert.equal(first.status.code, 0, 'a step-down is not an error');
  const stepDown = first.events.find((e) => e.name === 'baton.step_down');
  assert.ok(stepDown, 'the step-down is an event of the span');
  assert.equal(attr(stepDown.attributes, 'baton.stop_reason'), 'step-down-requested');
  assert.ok(BigInt(second.startTimeUnixNano) >= BigInt(first.endTimeUnixNano), 'term 2 began after term 1 ended');
  // How each term began: a found the lock free; b took it over when a released it.
  assert.equal(attr(first.attributes, 'baton.takeover.kind'), 'first');
  assert.equal(attr(second.attributes, 'baton.takeover.kind'), 'handover');
  assert.equal(attr(second.attributes, 'baton.previous_holder'), 'a');
  const gapMs = attr(second.attributes, 'baton.takeover.gap_ms') as number;
  assert.ok(gapMs >= 0 && gapMs < 5_000, `handover gap ${gapMs} ms`);
  console.log(`# handover gap ${gapMs} ms; ${posts.length} OTLP posts received`);
  const resource = posts.find((p) => p.path === '/v1/traces')!.body.resourceSpans[0].resource.attributes as KeyValue[];
  assert.equal(attr(resource, 'service.name'), 'reports');
  // The gauges: a led, then not; b waited, then led.
  assert.ok(statusOf('a').includes(1) && statusOf('b').includes(0) && statusOf('b').includes(1));
  assert.ok(points('baton.leader.term').some((p) => attr(p.attributes, 'baton.identity') === 'b' && p.asInt === '2'));
});

test('a protocol baton cannot speak: one line naming the variable, exit 78', async () => {
  const env = cleanEnv(dir.path, { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
  const r = await runCli(['run', '--store', dir.sqlite('otel-bad.db'), '--lock', 'otel', '--', 'true'], { env, timeoutMs: 20_000 });
  assert.equal(r.code, 78, r.stderr);
  const lines = r.stderr.trim().split('\n');
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0]!, /OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported.*http\/json/);
});
