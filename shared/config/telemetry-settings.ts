/**
 * Which telemetry this process sends, from the standard variables: Application Insights when
 * `APPLICATIONINSIGHTS_CONNECTION_STRING` is set (Azure), else OTLP when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set (any collector), else none. Read before anything else
 * is built, so a bad value fails at start-up naming the variable.
 */
import { z } from 'zod';

import { ConfigError } from '../errors';
import type { Env } from './connections';

export type OtlpProtocol = 'http/json' | 'http/protobuf';

export type TelemetrySettings =
  | { kind: 'off' }
  | {
      kind: 'azure-monitor';
      connectionString: string;
      serviceName: string;
      /** Entra ID (`APPLICATIONINSIGHTS_AUTHENTICATION_STRING` = `ClientId=…;Authorization=AAD`). */
      aad: boolean;
      /** The user-assigned identity that sends, with `aad`. */
      clientId?: string;
    }
  | { kind: 'otlp'; endpoint: string; protocol: OtlpProtocol; serviceName: string; metricIntervalMs: number };

/** What OTEL_SERVICE_NAME defaults to. */
export const SERVICE_NAME = 'pushdrain';
/** OTEL_METRIC_EXPORT_INTERVAL's default, as the SDK specification gives it. */
export const METRIC_INTERVAL_MS = 60_000;

const endpoint = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
const protocol = z.enum(['http/json', 'http/protobuf'], { error: 'must be http/json or http/protobuf' });

function given(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

/** `ClientId=…;Authorization=AAD` into its parts (keys are case-insensitive). */
export function authenticationString(value: string | undefined): { aad: boolean; clientId?: string } {
  const parts = new Map(
    (value ?? '')
      .split(';')
      .map((p) => p.split('='))
      .filter((kv): kv is [string, string] => kv.length === 2)
      .map(([k, v]) => [k.trim().toLowerCase(), v.trim()]),
  );
  const clientId = parts.get('clientid');
  return { aad: parts.get('authorization')?.toLowerCase() === 'aad', ...(clientId ? { clientId } : {}) };
}

export function telemetrySettings(env: Env = process.env): TelemetrySettings {
  const serviceName = given(env.OTEL_SERVICE_NAME) ?? SERVICE_NAME;
  const connectionString = given(env.APPLICATIONINSIGHTS_CONNECTION_STRING);
  if (connectionString)
    return {
      kind: 'azure-monitor',
      connectionString,
      serviceName,
      ...authenticationString(env.APPLICATIONINSIGHTS_AUTHENTICATION_STRING),
    };
  const rawEndpoint = given(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  if (!rawEndpoint) return { kind: 'off' };
  const url = endpoint.safeParse(rawEndpoint);
  if (!url.success) throw new ConfigError('OTEL_EXPORTER_OTLP_ENDPOINT', url.error.issues[0]?.message ?? 'is invalid');
  // The OTLP default is http/protobuf; grpc is not offered (it would pull in a gRPC stack).
  const p = protocol.safeParse(given(env.OTEL_EXPORTER_OTLP_PROTOCOL) ?? 'http/protobuf');
  if (!p.success) throw new ConfigError('OTEL_EXPORTER_OTLP_PROTOCOL', p.error.issues[0]?.message ?? 'is invalid');
  const interval = given(env.OTEL_METRIC_EXPORT_INTERVAL);
  const metricIntervalMs = interval === undefined ? METRIC_INTERVAL_MS : Number(interval);
  if (!Number.isInteger(metricIntervalMs) || metricIntervalMs < 100)
    throw new ConfigError('OTEL_METRIC_EXPORT_INTERVAL', `must be a whole number of ms ≥ 100, got "${interval}"`);
  return { kind: 'otlp', endpoint: url.data.replace(/\/+$/, ''), protocol: p.data, serviceName, metricIntervalMs };
}

/** One line for `npm start` and logs: where telemetry goes, or "telemetry off". Never the connection string. */
export function describeTelemetry(s: TelemetrySettings): string {
  switch (s.kind) {
    case 'off':
      return 'telemetry off (set OTEL_EXPORTER_OTLP_ENDPOINT or APPLICATIONINSIGHTS_CONNECTION_STRING)';
    case 'azure-monitor':
      return `Application Insights (${s.aad ? 'Entra ID' : 'connection string'}) as ${s.serviceName}`;
    case 'otlp':
      return `OTLP ${s.protocol} to ${s.endpoint} as ${s.serviceName}`;
  }
}
