/**
 * The OpenTelemetry Node SDK (`NodeSDK`) for any OTLP collector (Jaeger, Grafana, the Aspire
 * dashboard), configured by the SDK itself from the standard `OTEL_*` variables: the resource
 * (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, plus the process and host detectors), the sampler
 * (OTEL_TRACES_SAMPLER, …_ARG), the exporters and their protocol, endpoint, headers, timeout and
 * compression (OTEL_EXPORTER_OTLP_*), the batch processor (OTEL_BSP_*), the metric reader
 * (OTEL_METRIC_EXPORT_*), the propagators and span limits. Only the default `service.name`
 * (`pushdrain`) and the HTTP instrumentation are given in code. Loaded only by start-telemetry.ts
 * when telemetry is on.
 */
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';

import { SERVICE_NAME, type TelemetrySettings } from '../config/telemetry-settings';
import { deliveryHttpInstrumentation, patchLoadedHttp } from './delivery-http-instrumentation';
import { OtelTelemetry } from './otel-telemetry';

export function startOtlp(s: Extract<TelemetrySettings, { kind: 'otlp' }>): OtelTelemetry {
  const sdk = new NodeSDK({
    // Under what the detectors find: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over it.
    resource: defaultResource().merge(resourceFromAttributes({ 'service.name': SERVICE_NAME })),
    instrumentations: [deliveryHttpInstrumentation()],
  });
  sdk.start();
  patchLoadedHttp();
  return new OtelTelemetry({
    tracerProvider: trace.getTracerProvider(),
    meterProvider: metrics.getMeterProvider(),
    destination: `OTLP ${s.protocol} to ${s.endpoint} as ${s.serviceName}`,
    shutdown: async () => {
      await sdk.shutdown();
      // The SDK leaves its providers registered: a later start in this process (a test's) registers its own.
      for (const api of [trace, metrics, propagation, context]) api.disable();
    },
  });
}
