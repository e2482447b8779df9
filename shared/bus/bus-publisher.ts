/**
 * The port the app sends through: send now, schedule for later, cancel what was scheduled. What
 * to send is an OutgoingMessage from a builder of shared/bus/, and where, its type's entity
 * (message-types.ts). Implemented over Service Bus (notify/service-bus-publisher.ts), over
 * paired namespaces (notify/paired-publisher.ts), and by capturing fakes in tests.
 */
import type { PublisherHealth } from '../notify/failover-state';
import type { OutgoingMessage } from './outgoing-message';

/**
 * Messages scheduled on an entity that can still be taken back before they are due (Service
 * Bus cancels by sequence number; the numbers stay with the channel that scheduled them).
 */
export interface ScheduledMessages {
  readonly count: number;
  /**
   * The sequence numbers as decimal text: what another process needs to cancel them (a batch's
   * manifest keeps its pending watchdog check's), where the channel hands them back.
   */
  readonly sequenceNumbers?: readonly string[];
  /** Rejects when a message is no longer scheduled (it came due, or was cancelled already). */
  cancel(): Promise<void>;
}

export interface BusPublisher {
  send(entity: string, messages: readonly OutgoingMessage[]): Promise<void>;
  /** Delivered no earlier than `delayMs` from now, free until then; returns what can cancel it, where it can be. */
  schedule(entity: string, messages: readonly OutgoingMessage[], delayMs: number): Promise<ScheduledMessages | void>;
  /** Cancels scheduled messages by sequence number; rejects when one is no longer scheduled. Absent: cannot. */
  cancel?(entity: string, sequenceNumbers: readonly string[]): Promise<void>;
  /** Failover state per entity; only a publisher with a secondary namespace has one. */
  health?(): PublisherHealth;
  close(): Promise<void>;
}
