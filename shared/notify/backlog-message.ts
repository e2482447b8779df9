/**
 * A message parked in a backlog queue of the secondary namespace: the original body and
 * properties (so the subscriptions' filter properties travel with it), plus where it was going,
 * its time to live and its scheduled enqueue time as application properties. The syphon reads
 * it back and rebuilds the original from the validated body.
 */
import { BATCH_EVENTS_TOPIC, TOPIC, WATCHDOG_QUEUE } from '../names';
import { parseWorkDetected } from './events';
import { batchEventMessage, type OutgoingMessage, toMessage, watchdogMessage } from './messages';
import { parseWatchdogQueueMessage } from './watchdog-queue-message';

export const BACKLOG_PROPERTY = {
  /** The entity on the primary the message is for: `work-detected` or `batch-watchdog`. */
  destination: 'backlogDestination',
  /** The original time to live, in ms. */
  timeToLive: 'backlogTimeToLiveMs',
  /** ISO time the original was to be enqueued at; absent when it was sent for now. */
  scheduledEnqueueTime: 'backlogScheduledEnqueueTimeUtc',
  subject: 'backlogSubject',
} as const;

const BACKLOG_DESTINATIONS: readonly string[] = [TOPIC, WATCHDOG_QUEUE, BATCH_EVENTS_TOPIC];

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
  let message: OutgoingMessage;
  if (destination === TOPIC) {
    const event = parseWorkDetected(d.body);
    if (typeof event === 'string') return `the body is not a WorkDetected event: ${event}`;
    // The filters route on these properties: a copy whose properties disagree with its body would be misrouted.
    if (p.role !== event.role || p.queueName !== event.queueName)
      return 'the role and queueName properties disagree with the body';
    message = toMessage(event);
  } else if (destination === BATCH_EVENTS_TOPIC) {
    const event = batchEventOf(d.body);
    if (typeof event === 'string') return `the body is not a batch CloudEvent: ${event}`;
    message = batchEventMessage(event);
  } else {
    const read = parseWatchdogQueueMessage(d.body);
    if (typeof read === 'string') return `the body is not a watchdog check or a delivery retry: ${read}`;
    message = watchdogMessage(read.kind === 'check' ? read.check : read.retry);
  }
  return {
    destination,
    scheduledAt,
    message: { ...message, timeToLive: ttl, ...(d.messageId ? { messageId: d.messageId } : {}) },
  };
}

/** A batch event's structured JSON from a trigger body (bytes, text or a parsed object). */
function batchEventOf(body: unknown): { id: string; type: string; body: string } | string {
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
