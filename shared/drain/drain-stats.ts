/** What one drain round (or a drain's probe) did: the status report, health and tests read it. */
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
  /** Receives that failed (throttling, 5xx, sockets): they back off. */
  receiveErrors: number;
  stoppedByBudget: boolean;
}

export function emptyStats(): DrainStats {
  return {
    tasksStarted: 0,
    peakTasks: 0,
    receives: 0,
    emptyReceives: 0,
    processed: 0,
    failed: 0,
    poisoned: 0,
    sleeps: [],
    receiveErrors: 0,
    stoppedByBudget: false,
  };
}
