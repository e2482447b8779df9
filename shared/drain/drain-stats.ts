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
  /** Processed here while another delivery had the message too (a delete or extension found it taken). */
  duplicates: number;
  /** Visibility extensions made for messages still in work (one Update Message each). */
  extensions: number;
  /** Messages in a newer format than this instance reads, handed back for a newer instance (batch-handler.ts). */
  handedBack: number;
  /** The slot's lease was lost during the round: its tasks stopped taking messages. */
  leaseLost: boolean;
  /** Times a task waited, not receiving, because the process held all it could finish in time (ReceiveSizer). */
  holdWaits: number;
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
    duplicates: 0,
    extensions: 0,
    handedBack: 0,
    leaseLost: false,
    holdWaits: 0,
  };
}
