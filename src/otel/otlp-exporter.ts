/**
 * A small OTLP/HTTP exporter (JSON encoding) for the CLI's long-running commands: the span of
 * each leadership term (term-tracker.ts) and two gauges per lock, posted to
 * `<OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces` and `/v1/metrics`.
 *
 * Why our own and not the OpenTelemetry SDK: the CLI has one span kind and two gauges to send;
 * the SDK for that is five packages (tracing, metrics, resources, two exporters) that every CLI
 * user would have to install beside baton, for a few hundred lines of protocol that OTLP/JSON
 * fixes exactly. Library users who run the SDK already use api.ts instead, and their SDK exports.
 *
 * Configured by the standard variables: OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ / _METRICS_
 * endpoints, used as given), OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT,
 * OTEL_EXPORTER_OTLP_PROTOCOL (`http/json`; `http/protobuf` and `grpc` are refused with a
 * clear error), OTEL_SERVICE_NAME, OTEL_METRIC_EXPORT_INTERVAL (default 60000 ms).
 */
import { randomBytes } from 'node:crypto';
import type { LeaderElector } from '../core/elector.js';
import { InvalidConfigError, errorMessage } from '../core/errors.js';
import { BATON_VERSION } from '../core/identity.js';
import { ATTR, LOST_REASONS, SPAN_NAME, takeoverAttributes, trackTerms, type TermRecord } from './term-tracker.js';

/** OtlpConfig is what the environment asks for; null when OTLP export is not configured. */
export interface OtlpConfig {
  readonly tracesUrl: string;
  readonly metricsUrl: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly metricIntervalMs: number;
  readonly serviceName: string;
}

/** METRIC names: the leader gauge (client-go's meaning, OpenTelemetry's dotted style) and the term. */
export const METRIC = { status: 'baton.leader.status', term: 'baton.leader.term', takeoverGap: 'baton.leader.takeover_gap' } as const;

/**
 * otlpConfigFromEnv reads the standard OTEL_* variables; null when no endpoint is set. A value
 * that cannot be used throws InvalidConfigError naming the variable.
 */
export function otlpConfigFromEnv(env: NodeJS.ProcessEnv = process.env): OtlpConfig | null {
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const metrics = env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT?.trim();
  if (!base && !traces && !metrics) return null;
  const protocol = env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() || 'http/json';
  if (protocol !== 'http/json') {
    throw new InvalidConfigError(`OTEL_EXPORTER_OTLP_PROTOCOL: "${protocol}" is not supported by baton's exporter; set it to http/json`);
  }
  const url = (name: string, text: string) => {
    try {
      const u = new URL(text);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http');
      return u.toString();
    } catch {
      throw new InvalidConfigError(`${name}: "${text}" is not an http(s) URL`);
    }
  };
  const under = (path: string) => url('OTEL_EXPORTER_OTLP_ENDPOINT', `${base!.replace(/\/+$/, '')}${path}`);
  const number = (name: string, fallback: number) => {
    const text = env[name]?.trim();
    if (!text) return fallback;
    const n = Number(text);
    if (!Number.isFinite(n) || n <= 0) throw new InvalidConfigError(`${name}: "${text}" is not a positive number of milliseconds`);
    return n;
  };
  const headers: Record<string, string> = {};
  for (const pair of (env.OTEL_EXPORTER_OTLP_HEADERS ?? '').split(',').filter((p) => p.trim())) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new InvalidConfigError('OTEL_EXPORTER_OTLP_HEADERS: expected key=value pairs separated by commas');
    headers[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return {
    tracesUrl: traces ? url('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', traces) : under('/v1/traces'),
    metricsUrl: metrics ? url('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT', metrics) : under('/v1/metrics'),
    headers,
    timeoutMs: number('OTEL_EXPORTER_OTLP_TIMEOUT', 10_000),
    metricIntervalMs: number('OTEL_METRIC_EXPORT_INTERVAL', 60_000),
    serviceName: env.OTEL_SERVICE_NAME?.trim() || 'baton',
  };
}

type AnyValue = { stringValue: string } | { intValue: string };
type KeyValue = { key: string; value: AnyValue };

function attributes(values: Readonly<Record<string, string | number>>): KeyValue[] {
  return Object.entries(values).map(([key, v]) => ({ key, value: typeof v === 'number' ? { intValue: String(Math.trunc(v)) } : { stringValue: v } }));
}
const nanos = (wallMs: number) => `${BigInt(Math.round(wallMs * 1000)) * 1000n}`;

/**
 * OtlpExporter sends the terms of the electors it follows as spans, and their status and term
 * as gauges every metric interval; `shutdown()` sends what is left. Export failures go to
 * `onError` (once per distinct message) and never stop the command.
 */
export class OtlpExporter {
  private readonly electors = new Set<LeaderElector>();
  private readonly detach: Array<() => void> = [];
  private readonly pending = new Set<Promise<void>>();
  private readonly reported = new Set<string>();
  private readonly timer: NodeJS.Timeout;
  private readonly resource: { attributes: KeyValue[] };
  private readonly scope = { name: 'baton-election', version: BATON_VERSION };

  constructor(
    private readonly config: OtlpConfig,
    private readonly onError: (message: string) => void = () => {},
  ) {
    this.resource = { attributes: attributes({ 'service.name': config.serviceName, 'service.version': BATON_VERSION, 'process.pid': process.pid }) };
    this.timer = setInterval(() => this.track(this.sendMetrics()), config.metricIntervalMs);
    this.timer.unref();
  }

  /** follow exports `elector`'s terms and gauges; `store` is the (redacted) store label. */
  follow(elector: LeaderElector, store?: string): void {
    this.electors.add(elector);
    this.detach.push(trackTerms(elector, { ended: (t) => this.track(this.sendSpan(t)) }, { store }));
  }

  /** shutdown sends the last gauges and waits for every export under way (each bounded by the timeout). */
  async shutdown(): Promise<void> {
    clearInterval(this.timer);
    this.track(this.sendMetrics());
    for (const d of this.detach) d();
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  private track(p: Promise<void>): void {
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  private sendSpan(t: TermRecord): Promise<void> {
    const lost = t.reason !== undefined && LOST_REASONS.includes(t.reason);
    const span = {
      traceId: randomBytes(16).toString('hex'),
      spanId: randomBytes(8).toString('hex'),
      name: SPAN_NAME,
      kind: 1, // SPAN_KIND_INTERNAL
      startTimeUnixNano: nanos(t.startWallMs),
      endTimeUnixNano: nanos(t.endWallMs ?? Date.now()),
      attributes: attributes({
        [ATTR.lock]: t.lock,
        [ATTR.term]: t.term,
        [ATTR.identity]: t.identity,
        ...(t.store ? { [ATTR.store]: t.store } : {}),
        ...takeoverAttributes(t),
        ...(t.reason ? { [ATTR.stopReason]: t.reason } : {}),
      }),
      events: t.events.map((e) => ({ timeUnixNano: nanos(e.wallMs), name: e.name, attributes: attributes(e.attributes) })),
      status: lost ? { code: 2, message: `leadership ${t.reason}` } : { code: 0 },
    };
    return this.post(this.config.tracesUrl, { resourceSpans: [{ resource: this.resource, scopeSpans: [{ scope: this.scope, spans: [span] }] }] });
  }

  private sendMetrics(): Promise<void> {
    if (this.electors.size === 0) return Promise.resolve();
    const now = nanos(Date.now());
    const point = (e: LeaderElector, value: number) => ({ attributes: attributes({ [ATTR.lock]: e.lock, [ATTR.identity]: e.identity }), timeUnixNano: now, asInt: String(value) });
    const list = [...this.electors];
    const metrics = [
      { name: METRIC.status, description: '1 while this instance leads the lock, 0 while it is a standby', unit: '1', gauge: { dataPoints: list.map((e) => point(e, e.isLeader() ? 1 : 0)) } },
      { name: METRIC.term, description: 'fencing token of the lease as this instance last saw it; 0 before any', unit: '1', gauge: { dataPoints: list.map((e) => point(e, e.leader()?.term ?? 0)) } },
    ];
    return this.post(this.config.metricsUrl, { resourceMetrics: [{ resource: this.resource, scopeMetrics: [{ scope: this.scope, metrics }] }] });
  }

  private async post(url: string, body: unknown): Promise<void> {
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...this.config.headers },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.config.timeoutMs),
      });
      await res.arrayBuffer().catch(() => undefined);
      if (!res.ok) this.report(`OTLP export to ${url} answered ${res.status}`);
    } catch (err) {
      this.report(`OTLP export to ${url} failed: ${errorMessage(err)}`);
    }
  }

  private report(message: string): void {
    if (this.reported.has(message)) return;
    this.reported.add(message);
    this.onError(message);
  }
}
