/** The seams of the drainer: a queue, a processor, and a clock, all injected. */

export interface QueueMessage {
  id: string;
  popReceipt: string;
  /** 1 on first delivery. */
  dequeueCount: number;
  text: string;
}

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

export interface MessageProcessor {
  /** Throw to leave the message for redelivery; throw PermanentError to poison it now. */
  process(message: QueueMessage): Promise<void>;
  /** After a received batch is processed and before it is deleted (e.g. publish what it produced). */
  afterBatch?(): Promise<void>;
  /** A message was moved to poison: record it against its batch. */
  onPoison?(message: QueueMessage, reason: string): Promise<void>;
}

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
  /** U(0,1). */
  random(): number;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
  random: () => Math.random(),
};

export interface DrainLogger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export const silentLogger: DrainLogger = { info: () => {}, warn: () => {}, error: () => {} };
