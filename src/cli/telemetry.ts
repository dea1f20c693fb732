/**
 * OTLP export for the CLI's commands that hold leadership (`run`, `serve`, `cron`, `once`):
 * when OTEL_EXPORTER_OTLP_ENDPOINT (or a per-signal endpoint) is set, every elector they make
 * is followed by one OtlpExporter (src/otel/otlp-exporter.ts), and main() waits for its last
 * exports before the process exits.
 */
import type { LeaderElector } from '../core/elector.js';
import { OtlpExporter, otlpConfigFromEnv } from '../otel/otlp-exporter.js';
import { say } from './output.js';

let exporter: OtlpExporter | null | undefined;

/** exportTelemetry follows `elector` when OTLP export is configured; a bad OTEL_* value throws InvalidConfigError. */
export function exportTelemetry(elector: LeaderElector, storeLabel: string): void {
  if (exporter === undefined) {
    const config = otlpConfigFromEnv();
    exporter = config && new OtlpExporter(config, (message) => say('warn', message, 'otlp'));
  }
  exporter?.follow(elector, storeLabel);
}

/** shutdownTelemetry sends what is left (each request bounded by OTEL_EXPORTER_OTLP_TIMEOUT). */
export async function shutdownTelemetry(): Promise<void> {
  await exporter?.shutdown();
}
