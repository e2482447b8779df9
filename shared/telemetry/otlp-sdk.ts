/**
 * The OpenTelemetry SDK for OTLP/HTTP (any collector: Jaeger, Grafana, the Aspire dashboard),
 * `http/json` or `http/protobuf`. Loaded only by start-telemetry.ts when telemetry is on.
 * Registers the global providers and the async-context manager, so SDK instrumentation and
 * `inSpan` see the active span.
 */
import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPMetricExporter as JsonMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

import type { TelemetrySettings } from '../config/telemetry-settings';
import { OtelTelemetry } from './otel-telemetry';

export function startOtlp(s: Extract<TelemetrySettings, { kind: 'otlp' }>): OtelTelemetry {
  const resource = resourceFromAttributes({ 'service.name': s.serviceName });
  const json = s.protocol === 'http/json';
  const traces = { url: `${s.endpoint}/v1/traces` };
  const metricsUrl = { url: `${s.endpoint}/v1/metrics` };
  const tracerProvider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(json ? new JsonTraceExporter(traces) : new ProtoTraceExporter(traces))],
  });
  const meterProvider = new MeterProvider({
    resource,
    readers: [
      new PeriodicExportingMetricReader({
        exporter: json ? new JsonMetricExporter(metricsUrl) : new ProtoMetricExporter(metricsUrl),
        exportIntervalMillis: s.metricIntervalMs,
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
  return new OtelTelemetry({
    tracerProvider,
    meterProvider,
    destination: `OTLP ${s.protocol} to ${s.endpoint} as ${s.serviceName}`,
    shutdown: async () => {
      await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]);
    },
  });
}
