/**
 * The OpenTelemetry HTTP instrumentation, kept to what the app's own spans lack: the client span of
 * each batch-event POST (webhook or callback), with the receiver's status, address and timing, and
 * the W3C `traceparent` header on the request, so a receiver whose HTTP server is instrumented
 * continues the trace without reading the event. Everything else is left alone: a Storage or
 * Service Bus request already counts in `pushdrain.storage.transactions` and lies within a drain's
 * span, and a span per request would cost CPU on every chunk; inbound requests are the host's
 * (its invocation span) and the ingest span's.
 */
import type { RequestOptions } from 'node:http';
import { createRequire } from 'node:module';

import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';

/** The header every batch-event attempt carries (Standard Webhooks), and nothing else the app sends. */
const EVENT_POST_HEADER = 'webhook-id';

function isEventPost(request: RequestOptions): boolean {
  const headers = request.headers;
  if (headers === undefined || Array.isArray(headers)) return false;
  return (headers as Record<string, unknown>)[EVENT_POST_HEADER] !== undefined;
}

let instance: HttpInstrumentation | undefined;

/**
 * One per process: the require hook patches a module once, so a second instance (telemetry
 * started again after a shutdown, as tests do) would never patch `http`; the SDK hands this one
 * its new tracer provider at each start instead.
 */
export function deliveryHttpInstrumentation(): HttpInstrumentation {
  instance ??= new HttpInstrumentation({
    disableIncomingRequestInstrumentation: true,
    ignoreOutgoingRequestHook: (request) => !isEventPost(request),
  });
  return instance;
}

/**
 * The instrumentation patches a module when it is required after the SDK starts, and `http` and
 * `https` were loaded long before (the Azure SDKs use them): required again, they are patched in
 * place, and webhook-post.ts, which looks up `request` at each attempt, gets the patched one.
 */
export function patchLoadedHttp(): void {
  const load = createRequire(__filename);
  load('node:http');
  load('node:https');
}
