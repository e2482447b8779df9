/** The dequeue tasks' options and counters (see dequeue-tasks.ts). */

/** How many dequeue tasks a queue of a given depth deserves. */
export type TaskCountRule = (depth: number) => number;

export interface TaskOptions {
  batchSize: number;
  visibilityTimeoutSeconds: number;
  minIdleMs: number;
  maxIdleMs: number;
  maxTasks: number;
  maxDequeueCount: number;
  /** Epoch ms after which no task takes new work. */
  deadline: number;
  /** Host shutdown: stop taking work now, as if the budget were spent. */
  signal?: AbortSignal;
  /**
   * Push-driven queues: every producer enqueues first and then publishes WorkDetected, which
   * joins this group (nudge) or starts a drain. A task then has nothing to wait for: it stops
   * after a receive that came back short of a full batch (the queue held nothing more that was
   * visible), or empty, unless a wake-up joined meanwhile. Only failed receives back off.
   * Unset: the queue-listener tail, backing off to the cap after every empty receive.
   */
  stopWhenDrained?: boolean;
  /**
   * Sizes the group from the queue's depth, read once, when a receive first comes back full
   * (a deep queue); a drain of a few messages never pays for the read.
   */
  taskCount?: TaskCountRule;
}

export interface DrainStats {
  tasksStarted: number;
  peakTasks: number;
  receives: number;
  emptyReceives: number;
  processed: number;
  failed: number;
  poisoned: number;
  /** Back-off delays slept, in order (the test of the formula reads them). */
  sleeps: number[];
  /** Receives that failed (throttling, 5xx, sockets): they back off like empty receives. */
  receiveErrors: number;
  stoppedByBudget: boolean;
}

export type TaskGroupState = 'created' | 'running' | 'stopping' | 'stopped';

export function emptyStats(): DrainStats {
  return { tasksStarted: 0, peakTasks: 0, receives: 0, emptyReceives: 0, processed: 0, failed: 0, poisoned: 0, sleeps: [], receiveErrors: 0, stoppedByBudget: false };
}
