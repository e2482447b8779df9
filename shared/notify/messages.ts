/**
 * The Service Bus messages the app sends, as plain data (no SDK types), and the channel they
 * go through. One builder per destination, so every sender (primary, backlog, syphon) puts the
 * same routing properties on the wire.
 */
import { EVENT_TTL_MS, SCALE_CHECK_ROLE, WATCHDOG_TTL_MS } from '../names';
import { SCALE_CHECK, type WatchdogCheck, type WorkDetected } from './events';

/** Application property values Service Bus filters and the Functions host carry unchanged. */
export type PropertyValue = string | number | boolean;

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
  /** Sends now, or schedules for `scheduledAt` (a scheduled message, free until it fires). */
  send(entity: string, messages: readonly OutgoingMessage[], scheduledAt?: Date): Promise<void>;
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

export function watchdogMessage(check: WatchdogCheck): OutgoingMessage {
  return {
    body: check,
    contentType: 'application/json',
    subject: 'WatchdogCheck',
    // One id per (batch, attempt): duplicate detection, where enabled, drops a double schedule.
    messageId: `${check.batchId}:${check.attempt}`,
    timeToLive: WATCHDOG_TTL_MS,
    applicationProperties: {},
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
