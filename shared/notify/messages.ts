/**
 * The Service Bus messages the app sends, as plain data (no SDK types), and the channel they
 * go through. One builder per destination, so every sender (primary, backlog, syphon) puts the
 * same routing properties on the wire.
 */
import { BATCH_EVENT_TTL_MS, EVENT_TTL_MS, SCALE_CHECK_ROLE, WATCHDOG_TTL_MS } from '../names';
import type { DeliveryRetryMessage } from './delivery-retry-message';
import { SCALE_CHECK, type ScheduledMessages, type WatchdogCheck, type WorkDetected } from './events';

/** Application property values Service Bus filters and the Functions host carry unchanged. */
type PropertyValue = string | number | boolean;

/** The subset of the SDK's ServiceBusMessage the app uses. */
export interface OutgoingMessage {
  body: unknown;
  contentType: string;
  subject: string;
  messageId?: string;
  /** Explicit, so that a backlog copy can carry it (the entities' defaults are the same values). */
  timeToLive: number;
  applicationProperties: Record<string, PropertyValue>;
}

/** Sends to the entities of one namespace. Errors are the SDK's, unclassified. */
export interface MessageChannel {
  /**
   * Sends now, or schedules for `scheduledAt` (a scheduled message, free until it fires); a
   * schedule returns what can cancel it, where the channel can.
   */
  send(entity: string, messages: readonly OutgoingMessage[], scheduledAt?: Date): Promise<ScheduledMessages | void>;
  /** Cancels messages scheduled on the entity by their sequence numbers (ScheduledMessages.sequenceNumbers). */
  cancel?(entity: string, sequenceNumbers: readonly string[]): Promise<void>;
  /** Opens a sender link to the entity and closes it without sending: the entity takes sends again. */
  ping(entity: string): Promise<void>;
  close(): Promise<void>;
}

/** `role` and `queueName` are what the subscriptions' correlation filters match on. */
export function toMessage(event: WorkDetected): OutgoingMessage {
  const { traceparent, ...body } = event;
  return {
    body,
    contentType: 'application/json',
    subject: 'WorkDetected',
    timeToLive: EVENT_TTL_MS,
    applicationProperties: {
      role: event.role,
      queueName: event.queueName,
      ...(traceparent ? { [DIAGNOSTIC_ID]: traceparent } : {}),
    },
  };
}

/** The application property that carries a message's W3C trace context (Service Bus SDK, Functions host). */
export const DIAGNOSTIC_ID = 'Diagnostic-Id';

export function watchdogMessage(check: WatchdogCheck | DeliveryRetryMessage): OutgoingMessage {
  const retry = 'kind' in check;
  return {
    body: check,
    contentType: 'application/json',
    subject: retry ? check.kind : 'WatchdogCheck',
    // One id per (batch, attempt): duplicate detection, where enabled, drops a double schedule.
    messageId: retry
      ? `${check.batchId}:${check.eventId}:${check.index}:${check.attempts}`
      : `${check.batchId}:${check.attempt}`,
    timeToLive: WATCHDOG_TTL_MS,
    applicationProperties: {},
  };
}

/**
 * A batch event on `batch-events`: the structured CloudEvent as the body (the same bytes a webhook
 * gets), plus the `cloudEvents:`-prefixed application properties of the AMQP binding, so that a
 * consumer's subscription can filter on `cloudEvents:type` or `cloudEvents:subject`. The event's
 * `traceparent` is also the message's `Diagnostic-Id`, so a Service Bus or Functions consumer's
 * instrumentation continues the batch's trace as a webhook receiver can.
 */
export function batchEventMessage(e: { id: string; type: string; body: string }): OutgoingMessage {
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
    timeToLive: BATCH_EVENT_TTL_MS,
    applicationProperties: props,
  };
}

/** The scaling agent's own scheduled check: only the `scale` subscription's filter takes its role. */
export function scaleCheckMessage(): OutgoingMessage {
  return {
    body: SCALE_CHECK,
    contentType: 'application/json',
    subject: 'ScaleCheck',
    timeToLive: EVENT_TTL_MS,
    applicationProperties: { role: SCALE_CHECK_ROLE },
  };
}
