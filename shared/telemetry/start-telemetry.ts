/**
 * Starts telemetry from its settings (config/telemetry-settings.ts). Off, it returns
 * NO_TELEMETRY and loads no OpenTelemetry module: the SDKs are imported here, on demand, and
 * nowhere else in the app.
 */
import type { TelemetrySettings } from '../config/telemetry-settings';
import { NO_TELEMETRY, type Telemetry } from './telemetry';

export async function startTelemetry(s: TelemetrySettings): Promise<Telemetry> {
  switch (s.kind) {
    case 'off':
      return NO_TELEMETRY;
    case 'azure-monitor':
      return (await import('./azure-monitor-sdk.js')).startAzureMonitor(s);
    case 'otlp':
      return (await import('./otlp-sdk.js')).startOtlp(s);
  }
}
