/** The contract of a baseline's per-queue polling loop. */
import type { DrainQueue, Logger, MessageProcessor } from '../../../shared/ports';

export interface Listener {
  /** Stops polling, lets in-flight messages finish, and resolves when the loop has exited. */
  stop(): Promise<void>;
  /** Another function of this app just put a message on this queue (Functions' SharedQueueWatcher). */
  notify(): void;
  /** The messages received and not yet settled, each with how long ago it was received (a stall's diagnosis). */
  inFlight(): { id: string; ms: number }[];
}

export interface ListenerDeps {
  queue: DrainQueue;
  processor: MessageProcessor;
  log: Logger;
  maxDequeueCount: number;
  random: () => number;
  /** Release a failed message at once (Functions: update with visibility 0). */
  release?: (id: string, popReceipt: string) => Promise<void>;
  /** Start as if idle for this long (see functions-backoff.ts idleState); omit to start fresh. */
  idleMs?: number;
}

/** A listener loop runs until stopped; this caps it in case a harness forgets (hours, not the bench's minutes). */
export const LISTENER_MAX_RUN_MS = 2 * 3600_000;
