/** The seams of the drainer: a queue and a processor (time and logging come from ../ports). */

export interface QueueMessage {
  id: string;
  popReceipt: string;
  /** 1 on first delivery. */
  dequeueCount: number;
  text: string;
}

/** Azure's cap on one receive. */
export const MAX_RECEIVE = 32;

export interface DrainQueue {
  readonly name: string;
  receive(max: number, visibilityTimeoutSeconds: number): Promise<QueueMessage[]>;
  delete(message: QueueMessage): Promise<void>;
  /** Approximate count, invisible (in-flight) messages included. */
  depth(): Promise<number>;
  /** Whether at least one message is visible right now. */
  hasVisible(): Promise<boolean>;
  /** Moves a message to the `{queue}-poison` twin with the reason, then deletes it. */
  poison(message: QueueMessage, reason: string): Promise<void>;
}

/** What a `{queue}-poison` message holds: the original message, and why and when it was moved. */
export interface PoisonRecord {
  queue: string;
  messageId: string;
  dequeueCount: number;
  reason: string;
  at: string;
  text: string;
}

export interface MessageProcessor {
  /** Throw to leave the message for redelivery; throw PermanentError to poison it now. */
  process(message: QueueMessage): Promise<void>;
  /** After a received batch is processed and before it is deleted (e.g. publish what it produced). */
  afterBatch?(): Promise<void>;
  /** A message was moved to poison: record it against its batch. */
  onPoison?(message: QueueMessage, reason: string): Promise<void>;
}

export interface HeldSlot {
  readonly id: string;
  release(): Promise<void>;
}

/** The "processing already running" record: at most S concurrent drains per queue. */
export interface DrainSlots {
  /** A free slot for the queue, or undefined when all are held. */
  acquire(queue: string): Promise<HeldSlot | undefined>;
  /** How long a crashed holder can keep a slot: after this, a retry finds it free. */
  readonly holdLimitMs: number;
}
