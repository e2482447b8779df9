/** Sends to the entities of one namespace (notify/service-bus-channel.ts). Errors are the SDK's, unclassified. */
import type { ScheduledMessages } from './bus-publisher';
import type { OutgoingMessage } from './outgoing-message';

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
