/**
 * Application Insights through the Azure Monitor OpenTelemetry distro, authenticated with Entra
 * ID when `APPLICATIONINSIGHTS_AUTHENTICATION_STRING` says `Authorization=AAD` (infra sets it,
 * with the app's user-assigned identity). Loaded only by start-telemetry.ts when telemetry is on.
 */
import { shutdownAzureMonitor, useAzureMonitor } from '@azure/monitor-opentelemetry';
import { metrics, trace } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';

import type { TelemetrySettings } from '../config/telemetry-settings';
import { credentialFor } from '../storage/clients';
import { OtelTelemetry } from './otel-telemetry';

export function startAzureMonitor(s: Extract<TelemetrySettings, { kind: 'azure-monitor' }>): OtelTelemetry {
  useAzureMonitor({
    azureMonitorExporterOptions: {
      connectionString: s.connectionString,
      ...(s.aad
        ? {
            credential: credentialFor({
              credential: 'managedidentity',
              ...(s.clientId ? { clientId: s.clientId } : {}),
            }),
          }
        : {}),
    },
    resource: resourceFromAttributes({ 'service.name': s.serviceName }),
  });
  return new OtelTelemetry({
    tracerProvider: trace.getTracerProvider(),
    meterProvider: metrics.getMeterProvider(),
    destination: `Application Insights (${s.aad ? 'Entra ID' : 'connection string'}) as ${s.serviceName}`,
    shutdown: () => shutdownAzureMonitor(),
  });
}
