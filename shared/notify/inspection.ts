/**
 * The status report's port to Service Bus: counts per entity with the latest dead letters.
 * The adapter is service-bus-inspector.ts (peeking, Listen right only).
 */

/** One dead-lettered message, as the status page lists it. */
export interface DeadLetter {
  reason: string;
  description?: string;
  enqueuedAt: string;
  /** The start of the body, as JSON. */
  body: string;
}

export interface BusEntityCounts {
  /** `topic/Subscriptions/name` or a queue name. */
  entity: string;
  /** Messages a receiver can take now (peeked, so locked ones count too). */
  active: number;
  /** Scheduled messages (Azure returns them to a queue peek; the development broker does not). */
  scheduled: number;
  deadLetters: number;
  /** Counting stopped at the peek limit: there are at least `active + scheduled` messages. */
  truncated: boolean;
  /** The same for the dead-letter sub-queue. */
  deadLettersTruncated: boolean;
  /** The latest dead letters, newest first (at most 10). */
  deadLettered: DeadLetter[];
  /** Why the entity could not be read (missing Listen right, timeout, …). */
  error?: string;
}

export type BusInspection =
  | { available: true; method: 'peek'; limit: number; entities: BusEntityCounts[] }
  | { available: false; reason: string };

/** Counts on the Service Bus entities, with Listen rights only (no Manage claim needed). */
export interface BusInspector {
  inspect(): Promise<BusInspection>;
  close(): Promise<void>;
}
