/**
 * instrumentElectorOtel through the real OpenTelemetry SDK (sdk-trace-base's in-memory span
 * exporter, sdk-metrics' MeterProvider with a reader collected on demand), two electors on one
 * memory store. The first loses its store for writes — a fault injected by a Proxy that makes
 * its `write` throw StoreUnavailableError on demand, since the memory store cannot fail by
 * itself — so its renewals fail until it steps down at its renew deadline; the second takes
 * over and is stopped. Checked: spans, events, statuses, how each term began (first, failover
 * and its gap), the gauges and the takeover-gap histogram.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { LeaderElector } from '../../src/core/elector.js';
import { StoreUnavailableError } from '../../src/core/errors.js';
import type { LeaseStore } from '../../src/core/store.js';
import { openStore } from '../../src/stores/registry.js';
import { instrumentElectorOtel } from '../../src/otel/index.js';
import { waitFor } from '../harness/cli.js';

/** OnDemandReader is the SDK's MetricReader, collected when the test asks. */
class OnDemandReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

const FAST = { leaseDurationMs: 1000, renewDeadlineMs: 600, retryPeriodMs: 100 };

function gauge(rm: ResourceMetrics, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const sm of rm.scopeMetrics) for (const m of sm.metrics) if (m.descriptor.name === name) for (const p of m.dataPoints) out.set(String(p.attributes['baton.identity']), p.value as number);
  return out;
}

test('a span per term with its events and status, and the leader gauges, through the OpenTelemetry SDK', async () => {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider();
  tracerProvider.addSpanProcessor(new SimpleSpanProcessor(spans));
  const reader = new OnDemandReader();
  const meterProvider = new MeterProvider();
  meterProvider.addMetricReader(reader);
  const tracer = tracerProvider.getTracer('test');
  const meter = meterProvider.getMeter('test');

  const store = await openStore('memory:otel-api');
  let failing = false;
  const faulty = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'write' && failing) return () => Promise.reject(new StoreUnavailableError('memory: injected write failure'));
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as LeaseStore;
  const a = new LeaderElector({ store: faulty, lock: 'otel', identity: 'a', ...FAST, releaseOnStop: false });
  const b = new LeaderElector({ store, lock: 'otel', identity: 'b', ...FAST });
  let gapHistogram: { count: number; kind: string } | undefined;
  const ta = await instrumentElectorOtel(a, { tracer, meter, store: 'memory:otel-api' });
  const tb = await instrumentElectorOtel(b, { tracer, meter, store: 'memory:otel-api' });
  try {
    a.start();
    await waitFor('a to lead', () => a.isLeader(), 10_000, 10);
    b.start();
    await waitFor('b to see a', () => b.leader()?.holder === 'a', 10_000, 10);
    let status = gauge((await reader.collect()).resourceMetrics, 'baton.leader.status');
    assert.deepEqual([status.get('a'), status.get('b')], [1, 0]);
    assert.equal(gauge((await reader.collect()).resourceMetrics, 'baton.leader.term').get('b'), 1);

    failing = true;
    await waitFor('b to take over', () => b.isLeader(), 15_000, 10);
    status = gauge((await reader.collect()).resourceMetrics, 'baton.leader.status');
    assert.deepEqual([status.get('a'), status.get('b')], [0, 1]);
    await b.stop();
    for (const sm of (await reader.collect()).resourceMetrics.scopeMetrics) {
      for (const m of sm.metrics) {
        if (m.descriptor.name !== 'baton.leader.takeover_gap') continue;
        for (const p of m.dataPoints) gapHistogram = { count: (p.value as { count: number }).count, kind: String(p.attributes['baton.takeover.kind']) };
      }
    }
  } finally {
    failing = false;
    await a.stop();
    await b.stop();
    ta.close();
    tb.close();
    await store.close();
  }
  const finished = spans.getFinishedSpans();
  const first = finished.find((s) => s.attributes['baton.term'] === 1);
  const second = finished.find((s) => s.attributes['baton.term'] === 2);
  assert.ok(first && second, `two spans: ${finished.map((s) => JSON.stringify(s.attributes)).join(' ')}`);
  assert.equal(first.name, 'baton.leadership');
  assert.deepEqual(
    [first.attributes['baton.lock'], first.attributes['baton.identity'], first.attributes['baton.store'], first.attributes['baton.stop_reason']],
    ['otel', 'a', 'memory:otel-api', 'renew-deadline'],
  );
  assert.equal(first.status.code, 2, 'a term ended by its renew deadline is an error');
  const failed = first.events.filter((e) => e.name === 'baton.renew_failed');
  assert.ok(failed.length >= 1, 'failed renewals are events');
  assert.match(String(failed[0]!.attributes?.['exception.message']), /injected write failure/);
  assert.equal(first.events.at(-1)?.name, 'baton.step_down');
  assert.deepEqual([second.attributes['baton.identity'], second.attributes['baton.stop_reason'], second.status.code], ['b', 'stopped', 0]);
  // How each term began: a found the lock free; b took over after a's lease ran out.
  assert.equal(first.attributes['baton.takeover.kind'], 'first');
  assert.deepEqual([second.attributes['baton.takeover.kind'], second.attributes['baton.previous_holder']], ['failover', 'a']);
  const gapMs = second.attributes['baton.takeover.gap_ms'] as number;
  assert.ok(gapMs >= 500 && gapMs < 10_000, `failover gap ${gapMs} ms: at least most of a lease (1 s) after a's last renewal`);
  assert.deepEqual(gapHistogram, { count: 1, kind: 'failover' });
  console.log(`# failover gap ${gapMs} ms (lease 1000 ms)`);
});
