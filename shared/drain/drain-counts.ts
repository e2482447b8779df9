/**
 * What one probe or drain round did, counted by one object: the task group and what it calls
 * (the batch handler, the visibility keeper) record through add(), running() and mark(); the
 * worker, the status report and tests read snapshots. No other code writes a count.
 */

/** The events a probe or round counts. */
export type DrainEvent =
  | 'tasksStarted'
  | 'receives'
  | 'emptyReceives'
  /** Receives that failed (throttling, 5xx, sockets): they back off. */
  | 'receiveErrors'
  | 'processed'
  | 'failed'
  | 'poisoned'
  /** Processed here while another delivery had the message too (a delete or extension found it taken). */
  | 'duplicates'
  /** Visibility extensions made for messages still in work (one Update Message each). */
  | 'extensions'
  /** Messages in a newer format than this instance reads, handed back for a newer instance (batch-handler.ts). */
  | 'handedBack'
  /** Times a task waited, not receiving, because the process held all it could finish in time (ReceiveSizer). */
  | 'holdWaits';

const EVENTS: readonly DrainEvent[] = [
  'tasksStarted',
  'receives',
  'emptyReceives',
  'receiveErrors',
  'processed',
  'failed',
  'poisoned',
  'duplicates',
  'extensions',
  'handedBack',
  'holdWaits',
];

/** A read-only copy of a probe's or round's counts. */
export type DrainStats = Readonly<Record<DrainEvent, number>> & {
  /** The most tasks that ran at once. */
  readonly peakTasks: number;
  readonly stoppedByBudget: boolean;
  /** The slot's lease was lost during the round: its tasks stopped taking messages. */
  readonly leaseLost: boolean;
};

/** What the batch handler and the visibility keeper may do with the counts: add to them. */
export type DrainCounter = Pick<DrainCounts, 'add'>;

export class DrainCounts {
  private readonly counts = Object.fromEntries(EVENTS.map((e) => [e, 0])) as Record<DrainEvent, number>;
  private peakTasks = 0;
  private stoppedByBudget = false;
  private leaseLost = false;

  add(event: DrainEvent, by = 1): void {
    this.counts[event] += by;
  }

  /** Tasks running now: the peak keeps the most. */
  running(tasks: number): void {
    if (tasks > this.peakTasks) this.peakTasks = tasks;
  }

  /** Why the tasks stopped taking work before the queue was drained (a lease lost after the last look counts too). */
  mark(flag: 'stoppedByBudget' | 'leaseLost'): void {
    this[flag] = true;
  }

  get(event: DrainEvent): number {
    return this.counts[event];
  }

  snapshot(): DrainStats {
    return Object.freeze({
      ...this.counts,
      peakTasks: this.peakTasks,
      stoppedByBudget: this.stoppedByBudget,
      leaseLost: this.leaseLost,
    });
  }
}
