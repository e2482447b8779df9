/**
 * A message parked in a backlog queue of the secondary namespace: the original body and
 * properties (so the subscriptions' filter properties travel with it), plus where it was going,
 * its time to live and its scheduled enqueue time as application properties. The syphon reads
 * it back and rebuilds the original from the validated body.
 */
import { batchEventOutgoing, parseBatchEvent } from '../bus/batch-event';
import { BACKLOG_DESTINATIONS, MESSAGE_TYPES, type MessageTypeName, messageTypeOf } from '../bus/message-types';
import { DIAGNOSTIC_ID, type OutgoingMessage } from '../bus/outgoing-message';
import { parseScaleSignal, scaleCheckOutgoing } from '../bus/scale-check';
import { parseWatchdogQueueMessage, watchdogQueueOutgoing } from '../bus/watchdog-queue-message';
import { parseWorkDetected, workDetectedOutgoing } from '../bus/work-detected';
import { checkedTraceparent } from '../telemetry/telemetry';

export const BACKLOG_PROPERTY = {
  /** The entity on the primary the message is for (one of BACKLOG_DESTINATIONS). */
  destination: 'backlogDestination',
  /** The original time to live, in ms. */
  timeToLive: 'backlogTimeToLiveMs',
  /** ISO time the original was to be enqueued at; absent when it was sent for now. */
  scheduledEnqueueTime: 'backlogScheduledEnqueueTimeUtc',
  subject: 'backlogSubject',
} as const;

/** The message types a failed-over send may park (MESSAGE_TYPES' `backlog`). */
type Backlogged = {
  [K in MessageTypeName]: (typeof MESSAGE_TYPES)[K]['backlog'] extends true ? K : never;
}[MessageTypeName];

/** The original of each type from a backlog copy's body and properties, or what is wrong with it. */
const RESTORE: Record<Backlogged, (body: unknown, p: Readonly<Record<string, unknown>>) => OutgoingMessage | string> = {
  WorkDetected: (body, p) => {
    const event = parseWorkDetected(body);
    if (typeof event === 'string') return `the body is not a WorkDetected event: ${event}`;
    // The filters route on these properties: a copy whose properties disagree with its body would be misrouted.
    if (p.role !== event.role || p.queueName !== event.queueName)
      return 'the role and queueName properties disagree with the body';
    const traceparent = checkedTraceparent(p[DIAGNOSTIC_ID]);
    return workDetectedOutgoing(traceparent ? { ...event, traceparent } : event);
  },
  ScaleCheck: (body) => {
    const signal = parseScaleSignal(body);
    return typeof signal !== 'string' && signal.kind === 'check'
      ? scaleCheckOutgoing()
      : 'the body is not a scale check';
  },
  WatchdogCheck: restoreWatchdogQueue,
  DeliveryRetry: restoreWatchdogQueue,
  BatchEvent: (body) => {
    const event = parseBatchEvent(body);
    return typeof event === 'string' ? `the body is not a batch CloudEvent: ${event}` : batchEventOutgoing(event);
  },
};

/**
 * The original by the type its subject names; a copy that names none (hand-made) is read as each
 * type its destination takes, the first that parses.
 */
function restore(
  destination: string,
  subject: unknown,
  body: unknown,
  p: Readonly<Record<string, unknown>>,
): OutgoingMessage | string {
  const named = typeof subject === 'string' ? messageTypeOf(destination, subject) : undefined;
  if (typeof subject === 'string' && !named) return `${subject} is not a message type sent to ${destination}`;
  const candidates = (named ? [named] : (Object.keys(RESTORE) as Backlogged[])).filter(
    (n): n is Backlogged => MESSAGE_TYPES[n].entity === destination && n in RESTORE,
  );
  let first: string | undefined;
  for (const n of candidates) {
    const message = RESTORE[n](body, p);
    if (typeof message !== 'string') return message;
    first ??= message;
  }
  return first ?? `no message type is restored to ${destination}`;
}

function restoreWatchdogQueue(body: unknown): OutgoingMessage | string {
  const read = parseWatchdogQueueMessage(body);
  return typeof read === 'string'
    ? `the body is not a watchdog check or a delivery retry: ${read}`
    : watchdogQueueOutgoing(read);
}

export function toBacklogMessage(
  destination: string,
  original: OutgoingMessage,
  scheduledAt: Date | undefined,
  now: number,
): OutgoingMessage {
  const wait = scheduledAt ? Math.max(0, scheduledAt.getTime() - now) : 0;
  return {
    ...original,
    // The copy must live as long as the original would: its wait for the schedule plus its TTL.
    timeToLive: original.timeToLive + wait,
    applicationProperties: {
      ...original.applicationProperties,
      [BACKLOG_PROPERTY.destination]: destination,
      [BACKLOG_PROPERTY.timeToLive]: original.timeToLive,
      [BACKLOG_PROPERTY.subject]: original.subject,
      ...(scheduledAt ? { [BACKLOG_PROPERTY.scheduledEnqueueTime]: scheduledAt.toISOString() } : {}),
    },
  };
}

/** What the syphon's trigger hands over: the body and the metadata the Functions host provides. */
export interface BacklogDelivery {
  body: unknown;
  applicationProperties: Readonly<Record<string, unknown>> | undefined;
  messageId?: string;
  /** How often it was delivered before (0 or 1 on the first delivery, depending on the host). */
  deliveryCount: number;
}

export interface Restorable {
  destination: string;
  message: OutgoingMessage;
  scheduledAt: Date | undefined;
}

/** The original message, or what is wrong with the backlog copy (it can never be restored). */
export function fromBacklog(d: BacklogDelivery): Restorable | string {
  const p = d.applicationProperties ?? {};
  const destination = p[BACKLOG_PROPERTY.destination];
  if (typeof destination !== 'string' || !BACKLOG_DESTINATIONS.includes(destination)) {
    return `${BACKLOG_PROPERTY.destination} is ${JSON.stringify(destination) ?? 'absent'}, not one of ${BACKLOG_DESTINATIONS.join(', ')}`;
  }
  const ttl = p[BACKLOG_PROPERTY.timeToLive];
  if (typeof ttl !== 'number' || !Number.isSafeInteger(ttl) || ttl <= 0)
    return `${BACKLOG_PROPERTY.timeToLive} is not a positive whole number of ms`;
  const rawAt = p[BACKLOG_PROPERTY.scheduledEnqueueTime];
  const scheduledAt = typeof rawAt === 'string' ? new Date(rawAt) : undefined;
  if (rawAt !== undefined && (scheduledAt === undefined || Number.isNaN(scheduledAt.getTime()))) {
    return `${BACKLOG_PROPERTY.scheduledEnqueueTime} is not an ISO time`;
  }
  const message = restore(destination, p[BACKLOG_PROPERTY.subject], d.body, p);
  if (typeof message === 'string') return message;
  return {
    destination,
    scheduledAt,
    message: { ...message, timeToLive: ttl, ...(d.messageId ? { messageId: d.messageId } : {}) },
  };
}
