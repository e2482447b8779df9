/**
 * Which telemetry this process sends, from the standard variables: Application Insights when
 * `APPLICATIONINSIGHTS_CONNECTION_STRING` is set (Azure), else OTLP when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (any collector),
 * else none (`OTEL_SDK_DISABLED=true` too). Read before anything else is built, so a bad value
 * fails at start-up naming the variable. Beyond this switch the OpenTelemetry Node SDK reads the
 * `OTEL_*` variables itself (shared/telemetry/otlp-sdk.ts); what is read here only has to agree
 * with it, for the start-up line and for the errors.
 */
import { z } from 'zod';

import { ConfigError } from '../errors';
import type { Env } from './connections';

type OtlpProtocol = 'grpc' | 'http/json' | 'http/protobuf';

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
  | { kind: 'otlp'; endpoint: string; protocol: OtlpProtocol; serviceName: string };

/** What OTEL_SERVICE_NAME defaults to. */
export const SERVICE_NAME = 'pushdrain';
const endpoint = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
const protocol = z.enum(['grpc', 'http/json', 'http/protobuf'], { error: 'must be grpc, http/json or http/protobuf' });

function given(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

/** `ClientId=…;Authorization=AAD` into its parts (keys are case-insensitive). */
function authenticationString(value: string | undefined): { aad: boolean; clientId?: string } {
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

/**
 * `service.name` as the SDK's resource detection settles it: OTEL_SERVICE_NAME, else a
 * `service.name` in OTEL_RESOURCE_ATTRIBUTES (`key=value,…`, values percent-encoded), else ours.
 */
function serviceNameOf(env: Env): string {
  const named = given(env.OTEL_SERVICE_NAME);
  if (named) return named;
  for (const pair of (env.OTEL_RESOURCE_ATTRIBUTES ?? '').split(',')) {
    const [k, v] = pair.split('=');
    if (k?.trim() !== 'service.name' || v === undefined) continue;
    try {
      return decodeURIComponent(v.trim()) || SERVICE_NAME;
    } catch {
      return SERVICE_NAME;
    }
  }
  return SERVICE_NAME;
}

export function telemetrySettings(env: Env = process.env): TelemetrySettings {
  const serviceName = serviceNameOf(env);
  const connectionString = given(env.APPLICATIONINSIGHTS_CONNECTION_STRING);
  if (connectionString)
    return {
      kind: 'azure-monitor',
      connectionString,
      serviceName,
      ...authenticationString(env.APPLICATIONINSIGHTS_AUTHENTICATION_STRING),
    };
  // The specification's switch: the SDK is off whatever else is set.
  if (given(env.OTEL_SDK_DISABLED)?.toLowerCase() === 'true') return { kind: 'off' };
  const variable = given(env.OTEL_EXPORTER_OTLP_ENDPOINT)
    ? 'OTEL_EXPORTER_OTLP_ENDPOINT'
    : 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT';
  const rawEndpoint = given(env[variable]);
  if (!rawEndpoint) return { kind: 'off' };
  const url = endpoint.safeParse(rawEndpoint);
  if (!url.success) throw new ConfigError(variable, url.error.issues[0]?.message ?? 'is invalid');
  // The OTLP default is http/protobuf.
  const p = protocol.safeParse(given(env.OTEL_EXPORTER_OTLP_PROTOCOL) ?? 'http/protobuf');
  if (!p.success) throw new ConfigError('OTEL_EXPORTER_OTLP_PROTOCOL', p.error.issues[0]?.message ?? 'is invalid');
  const interval = given(env.OTEL_METRIC_EXPORT_INTERVAL);
  // The SDK would fall back to its default silently: a typo fails here instead.
  if (interval !== undefined && !(Number.isInteger(Number(interval)) && Number(interval) >= 100))
    throw new ConfigError('OTEL_METRIC_EXPORT_INTERVAL', `must be a whole number of ms ≥ 100, got "${interval}"`);
  return { kind: 'otlp', endpoint: url.data.replace(/\/+$/, ''), protocol: p.data, serviceName };
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
