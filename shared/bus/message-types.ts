/**
 * Every message type the app sends over Service Bus, one line each: the entity it goes to, its
 * subject, its time to live, whether a send that fails over may park it in a backlog queue of the
 * secondary (the syphon restores it), and the functions that take it. The publishers, the backlog
 * restore and a test against functions/ and infra/servicebus-entities.json read this table; a new
 * type is one file in shared/bus/ (its body, builder and parser), one line here and its trigger.
 */
import { BATCH_EVENT_TTL_MS, BATCH_EVENTS_TOPIC, EVENT_TTL_MS, TOPIC, WATCHDOG_QUEUE, WATCHDOG_TTL_MS } from '../names';

export interface MessageType {
  readonly entity: string;
  /** The message's subject; undefined: the CloudEvent type of the event it carries. */
  readonly subject: string | undefined;
  /** The entity's default time to live, set on each message so a backlog copy can carry it. */
  readonly ttlMs: number;
  readonly backlog: boolean;
  /** The functions (functions/) whose trigger takes it; none: the clients' own subscriptions do. */
  readonly consumers: readonly string[];
}

// prettier-ignore
export const MESSAGE_TYPES = {
  WorkDetected:  { entity: TOPIC,              subject: 'WorkDetected',  ttlMs: EVENT_TTL_MS,       backlog: true, consumers: ['drain', 'aggregate', 'scaleAgent'] },
  ScaleCheck:    { entity: TOPIC,              subject: 'ScaleCheck',    ttlMs: EVENT_TTL_MS,       backlog: true, consumers: ['scaleAgent'] },
  WatchdogCheck: { entity: WATCHDOG_QUEUE,     subject: 'WatchdogCheck', ttlMs: WATCHDOG_TTL_MS,    backlog: true, consumers: ['watchdog'] },
  DeliveryRetry: { entity: WATCHDOG_QUEUE,     subject: 'DeliveryRetry', ttlMs: WATCHDOG_TTL_MS,    backlog: true, consumers: ['watchdog'] },
  BatchEvent:    { entity: BATCH_EVENTS_TOPIC, subject: undefined,       ttlMs: BATCH_EVENT_TTL_MS, backlog: true, consumers: [] },
} as const satisfies Record<string, MessageType>;

export type MessageTypeName = keyof typeof MESSAGE_TYPES;

/** The entities the app sends to: a publisher keeps its failover state per entity. */
export const SENT_ENTITIES: readonly string[] = [...new Set(Object.values(MESSAGE_TYPES).map((t) => t.entity))];

/** The entities a backlog copy may be restored to. */
export const BACKLOG_DESTINATIONS: readonly string[] = [
  ...new Set(
    Object.values(MESSAGE_TYPES)
      .filter((t) => t.backlog)
      .map((t) => t.entity),
  ),
];

/** The type of a message sent to `entity` with `subject` (a batch event: any subject on its topic). */
export function messageTypeOf(entity: string, subject: string | undefined): MessageTypeName | undefined {
  const names = Object.keys(MESSAGE_TYPES) as MessageTypeName[];
  return names.find((n) => {
    const t: MessageType = MESSAGE_TYPES[n];
    return t.entity === entity && (t.subject === undefined || t.subject === subject);
  });
}
