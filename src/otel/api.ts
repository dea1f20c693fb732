/**
 * OpenTelemetry for a LeaderElector in a process that runs the OpenTelemetry SDK: spans and
 * gauges go through `@opentelemetry/api` (an optional peer dependency, loaded here only when
 * no tracer and meter are passed), so whatever exporter the application configured sends them.
 */
import type { Meter, Tracer } from '@opentelemetry/api';
import type { LeaderElector } from '../core/elector.js';
import { InvalidConfigError, errorMessage } from '../core/errors.js';
import { BATON_VERSION } from '../core/identity.js';
import { ATTR, LOST_REASONS, SPAN_NAME, takeoverAttributes, trackTerms } from './term-tracker.js';
import { METRIC } from './otlp-exporter.js';

/** OtelOptions: where spans and metrics go, and the store label to put on the spans. */
export interface OtelOptions {
  /** Default: `trace.getTracer('baton-election', version)` from the global provider. */
  tracer?: Tracer;
  /** Default: `metrics.getMeter('baton-election', version)` from the global provider. */
  meter?: Meter;
  /** The store, as a label (a URL without its password); set as `baton.store` on each span. */
  store?: string;
}

/** ElectorTelemetry is returned by instrumentElectorOtel; `close` detaches (an open term's span is ended by the elector's `stopped`). */
export interface ElectorTelemetry {
  close(): void;
}

type Api = typeof import('@opentelemetry/api');

async function loadApi(): Promise<Api> {
  try {
    return await import('@opentelemetry/api');
  } catch (err) {
    throw new InvalidConfigError(`otel: @opentelemetry/api is not installed (npm install @opentelemetry/api): ${errorMessage(err)}`);
  }
}

/**
 * instrumentElectorOtel follows `elector`: a span `baton.leadership` per term (attributes
 * `baton.lock`, `baton.term`, `baton.identity`, `baton.store`, and at its end
 * `baton.stop_reason`; status ERROR when the term was lost or ran past its renew deadline),
 * with events `baton.renew_failed` (`exception.message`) and `baton.step_down`; and the
 * observable gauges `baton.leader.status` (1 while leading) and `baton.leader.term`, with
 * `baton.lock` and `baton.identity`; and the histogram `baton.leader.takeover_gap` (seconds,
 * with `baton.lock` and `baton.takeover.kind`) of each takeover this instance made. Each span
 * also says how its term began: `baton.takeover.kind`, `baton.previous_holder`,
 * `baton.takeover.gap_ms` (term-tracker.ts's Takeover).
 */
export async function instrumentElectorOtel(elector: LeaderElector, options: OtelOptions = {}): Promise<ElectorTelemetry> {
  const api = options.tracer && options.meter ? undefined : await loadApi();
  const tracer = options.tracer ?? api!.trace.getTracer('baton-election', BATON_VERSION);
  const meter = options.meter ?? api!.metrics.getMeter('baton-election', BATON_VERSION);
  const ERROR = 2; // SpanStatusCode.ERROR, a stable number of the API
  const spans = new Map<number, ReturnType<Tracer['startSpan']>>();
  const gap = meter.createHistogram(METRIC.takeoverGap, { description: 'time without a leader before this instance took over: from the release (handover) or the last renewal it saw (failover) to its acquisition', unit: 's' });
  const detach = trackTerms(
    elector,
    {
      started: (t) => {
        const attributes = { [ATTR.lock]: t.lock, [ATTR.term]: t.term, [ATTR.identity]: t.identity, ...(t.store ? { [ATTR.store]: t.store } : {}), ...takeoverAttributes(t) };
        spans.set(t.term, tracer.startSpan(SPAN_NAME, { attributes, startTime: t.startWallMs }));
        if (t.takeover.gapMs !== undefined) gap.record(Math.max(0, t.takeover.gapMs) / 1000, { [ATTR.lock]: t.lock, [ATTR.takeoverKind]: t.takeover.kind });
      },
      event: (t, e) => spans.get(t.term)?.addEvent(e.name, e.attributes, e.wallMs),
      ended: (t) => {
        const span = spans.get(t.term);
        if (!span) return;
        spans.delete(t.term);
        if (t.reason) span.setAttribute(ATTR.stopReason, t.reason);
        if (t.reason && LOST_REASONS.includes(t.reason)) span.setStatus({ code: ERROR, message: `leadership ${t.reason}` });
        span.end(t.endWallMs);
      },
    },
    { store: options.store },
  );
  const labels = { [ATTR.lock]: elector.lock, [ATTR.identity]: elector.identity };
  const status = meter.createObservableGauge(METRIC.status, { description: '1 while this instance leads the lock, 0 while it is a standby', unit: '1' });
  const term = meter.createObservableGauge(METRIC.term, { description: 'fencing token of the lease as this instance last saw it; 0 before any', unit: '1' });
  const observeStatus = (r: { observe(v: number, a: Record<string, string>): void }) => r.observe(elector.isLeader() ? 1 : 0, labels);
  const observeTerm = (r: { observe(v: number, a: Record<string, string>): void }) => r.observe(elector.leader()?.term ?? 0, labels);
  status.addCallback(observeStatus);
  term.addCallback(observeTerm);
  return {
    close() {
      detach();
      status.removeCallback(observeStatus);
      term.removeCallback(observeTerm);
    },
  };
}
