/**
 * A batch event on `batch-events`: the structured CloudEvent as the body (the same bytes a webhook
 * gets), plus the `cloudEvents:`-prefixed application properties of the AMQP binding, so that a
 * consumer's subscription can filter on `cloudEvents:type` or `cloudEvents:subject`. The event's
 * `traceparent` is also the message's `Diagnostic-Id`, so a Service Bus or Functions consumer's
 * instrumentation continues the batch's trace as a webhook receiver can.
 */
import { MESSAGE_TYPES } from './message-types';
import { DIAGNOSTIC_ID, type OutgoingMessage, type PropertyValue } from './outgoing-message';

/** A batch event as the outbox holds it: its id, its CloudEvent type, and the structured JSON. */
export interface BatchEventBody {
  id: string;
  type: string;
  body: string;
}

export function batchEventOutgoing(e: BatchEventBody): OutgoingMessage {
  const ce = JSON.parse(e.body) as Record<string, unknown>;
  const props: Record<string, PropertyValue> = {};
  for (const k of ['id', 'source', 'specversion', 'type', 'subject', 'time', 'traceparent', 'tracestate']) {
    const v = ce[k];
    if (typeof v === 'string') props[`cloudEvents:${k}`] = v;
  }
  if (typeof ce.traceparent === 'string') props[DIAGNOSTIC_ID] = ce.traceparent;
  return {
    body: Buffer.from(e.body, 'utf8'),
    contentType: 'application/cloudevents+json; charset=utf-8',
    subject: e.type,
    messageId: e.id,
    timeToLive: MESSAGE_TYPES.BatchEvent.ttlMs,
    applicationProperties: props,
  };
}

/** A batch event's structured JSON from a trigger body (bytes, text or a parsed object); a string says what is wrong. */
export function parseBatchEvent(body: unknown): BatchEventBody | string {
  const text =
    typeof body === 'string'
      ? body
      : body instanceof Uint8Array
        ? Buffer.from(body).toString('utf8')
        : JSON.stringify(body ?? null);
  let ce: unknown;
  try {
    ce = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  const v = ce as Record<string, unknown> | null;
  if (typeof v !== 'object' || v === null || typeof v.id !== 'string' || typeof v.type !== 'string')
    return 'no id and type';
  return { id: v.id, type: v.type, body: text };
}
