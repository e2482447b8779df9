/**
 * A batch event delivery's scheduled retry: its own message on the `batch-watchdog` queue (the
 * per-batch scheduled queue, with its send availability and dead-lettering), beside the
 * watchdog's checks but not one of them. Read with watchdog-queue-message.ts.
 */
import { MESSAGE_TYPES } from './message-types';
import type { OutgoingMessage } from './outgoing-message';

/** Which delivery to attempt again, and what the manifest must still say for the message to be current. */
export interface DeliveryRetry {
  eventId: string;
  /** The delivery's index in its event's list. */
  index: number;
  /** Attempts made when the retry was scheduled: a message that disagrees with the manifest is stale. */
  attempts: number;
  /** The delivery's `retryKey` when recovery scheduled this message (none on the original). */
  key?: string;
}

const TYPE = MESSAGE_TYPES.DeliveryRetry;

export interface DeliveryRetryMessage extends DeliveryRetry {
  v: 1;
  kind: typeof TYPE.subject;
  batchId: string;
}

export function deliveryRetryMessage(batchId: string, r: DeliveryRetry): DeliveryRetryMessage {
  return {
    v: 1,
    kind: TYPE.subject,
    batchId,
    eventId: r.eventId,
    index: r.index,
    attempts: r.attempts,
    ...(r.key !== undefined ? { key: r.key } : {}),
  };
}

export function deliveryRetryOutgoing(retry: DeliveryRetryMessage): OutgoingMessage {
  return {
    body: retry,
    contentType: 'application/json',
    subject: TYPE.subject,
    // One id per (delivery, attempts): duplicate detection, where enabled, drops a double schedule.
    messageId: `${retry.batchId}:${retry.eventId}:${retry.index}:${retry.attempts}`,
    timeToLive: TYPE.ttlMs,
    applicationProperties: {},
  };
}

/** The delivery's fields from a parsed body (bounded strings); a string says what is wrong. */
export function parseDeliveryRetry(raw: unknown): DeliveryRetry | string {
  const d = raw as Record<string, unknown> | null;
  const whole = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0;
  if (typeof d !== 'object' || d === null || typeof d.eventId !== 'string' || !whole(d.index) || !whole(d.attempts))
    return 'a delivery retry must have an eventId, an index and attempts';
  if (d.key !== undefined && typeof d.key !== 'string') return 'a delivery retry key must be a string';
  return {
    eventId: d.eventId.slice(0, 100),
    index: d.index,
    attempts: d.attempts,
    ...(d.key !== undefined ? { key: d.key.slice(0, 100) } : {}),
  };
}
