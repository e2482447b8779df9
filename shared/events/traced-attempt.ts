/**
 * A delivery attempt in a `pushdrain.deliver` span, a child of the context the event carries (its
 * `traceparent`: the finalize span that produced it), so each attempt, retried or redelivered after
 * a crash, lands on the batch's trace with its target kind, attempt number and outcome, and the
 * HTTP client span of the POST (delivery-http-instrumentation.ts) nests under it. With telemetry
 * off the attempt runs as it is.
 */
import type { Telemetry } from '../telemetry/telemetry';
import type { AttemptFn } from './delivery-attempt';

/** The event's own trace context, read from the structured body that every attempt sends. */
function eventTraceparent(body: string): string | undefined {
  try {
    const tp = (JSON.parse(body) as { traceparent?: unknown }).traceparent;
    return typeof tp === 'string' ? tp : undefined;
  } catch {
    return undefined;
  }
}

export function tracedAttempt(telemetry: Telemetry, attempt: AttemptFn): AttemptFn {
  if (!telemetry.enabled) return attempt;
  return (d, e) =>
    telemetry.inSpan(
      'pushdrain.deliver',
      {
        parent: eventTraceparent(e.body),
        attributes: {
          'pushdrain.event_id': e.id,
          'pushdrain.target_kind': d.kind,
          'pushdrain.attempt': d.attempts + 1,
        },
      },
      async (span) => {
        const result = await attempt(d, e);
        if (result.status !== undefined) span.set('http.response.status_code', result.status);
        if (result.error !== undefined) span.fail(new Error(result.error));
        return result;
      },
    );
}
