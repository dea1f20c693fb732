/**
 * baton-election/otel: OpenTelemetry spans and gauges for electors. `instrumentElectorOtel`
 * goes through `@opentelemetry/api` (optional peer); `OtlpExporter` is the CLI's own OTLP/HTTP
 * JSON exporter, usable without any OpenTelemetry package.
 */
export { instrumentElectorOtel, type OtelOptions, type ElectorTelemetry } from './api.js';
export { OtlpExporter, otlpConfigFromEnv, METRIC, type OtlpConfig } from './otlp-exporter.js';
export { trackTerms, SPAN_NAME, EVENT, ATTR, type TermRecord, type TermEvent, type TermSink } from './term-tracker.js';
