/**
 * The port to the app's Service Bus dead-letter queues: count them (health) and resubmit them
 * (redrive). The adapter is service-bus-dead-letters.ts. Which entities, where a dead letter
 * goes back to, and which bodies are worth resubmitting are decided here, without the SDK.
 */
import { parseScaleSignal } from '../bus/scale-check';
import { parseWatchdogQueueMessage } from '../bus/watchdog-queue-message';
import { parseWorkDetected } from '../bus/work-detected';
import { SUBSCRIPTIONS, TOPIC, WATCHDOG_QUEUE } from '../names';

/** One entity whose dead letters the app resubmits. */
export interface DeadLetterSource {
  /** As the status report names it: `work-detected/Subscriptions/drain`, or `batch-watchdog`. */
  entity: string;
  /** Where to read: a queue, or a topic's subscription. */
  queue?: string;
  topic?: string;
  subscription?: string;
  /**
   * Where a resubmitted message is sent: the topic for a subscription (its filters route it
   * again, so every subscription whose filter matches gets a copy), the queue itself for a queue.
   */
  target: string;
  /** Why a body is not worth resubmitting (the function would only discard it), or undefined. */
  unreadable(body: unknown): string | undefined;
}

/** A dead letter left where it is, with why. */
export interface KeptDeadLetter {
  entity: string;
  sequenceNumber: string;
  messageId?: string;
  deadLetterReason: string;
  problem: string;
}

/** What one entity's resubmission did. */
export interface ResubmitOutcome {
  entity: string;
  moved: number;
  kept: KeptDeadLetter[];
  /** The entity failed part-way: what moved before stays moved, the rest stays dead-lettered. */
  error?: string;
}

export interface DeadLetterCount {
  entity: string;
  deadLetters: number;
  /** Counting stopped at the peek limit: at least `deadLetters`. */
  truncated: boolean;
  /** Why the entity could not be counted. */
  error?: string;
}

/** Reads and resubmits dead letters with the Listen and Send rights the app already has. */
export interface DeadLetterQueues {
  readonly sources: readonly DeadLetterSource[];
  /** Peeks each source's dead-letter queue (one operation per entity below the limit). */
  count(): Promise<DeadLetterCount[]>;
  /**
   * Moves up to `max` readable dead letters back: receive (peekLock), send a copy, complete.
   * Unreadable ones are reported and left in the dead-letter queue.
   */
  resubmit(source: DeadLetterSource, max: number): Promise<ResubmitOutcome>;
  close(): Promise<void>;
}

const reason = (r: unknown): string | undefined => (typeof r === 'string' ? r : undefined);

function subscriptionSource(name: string, unreadable: (body: unknown) => string | undefined): DeadLetterSource {
  return { entity: `${TOPIC}/Subscriptions/${name}`, topic: TOPIC, subscription: name, target: TOPIC, unreadable };
}

/** The app's subscriptions (the `scale` one dead-letters only past its max delivery count) and the watchdog queue. */
export const APP_DEAD_LETTER_SOURCES: readonly DeadLetterSource[] = [
  subscriptionSource(SUBSCRIPTIONS.drain.name, (b) => reason(parseWorkDetected(b))),
  subscriptionSource(SUBSCRIPTIONS.aggregate.name, (b) => reason(parseWorkDetected(b))),
  subscriptionSource(SUBSCRIPTIONS.scale.name, (b) => reason(parseScaleSignal(b))),
  {
    entity: WATCHDOG_QUEUE,
    queue: WATCHDOG_QUEUE,
    target: WATCHDOG_QUEUE,
    unreadable: (b) => reason(parseWatchdogQueueMessage(b)),
  },
];

/** Properties Service Bus adds when it dead-letters a message; a resubmitted copy starts clean. */
export const DEAD_LETTER_PROPERTIES: readonly string[] = ['DeadLetterReason', 'DeadLetterErrorDescription'];
