/**
 * Where later wake-ups of this process join a drain in progress (DrainCoordinator). A join is
 * accepted only while the drain is certain to look at the queue afterwards: its tasks will
 * receive again (nudge), or its next look has not started yet.
 */
import type { DrainStats } from './drain-stats';
import type { TaskGroup } from './task-group';

/** The counters a drain adds to the process's activity (GET /api/health). */
export type Counted = 'processed' | 'duplicates' | 'extensions' | 'leasesLost';
export const COUNTED: readonly Counted[] = ['processed', 'duplicates', 'extensions', 'leasesLost'];

function countOf(stats: DrainStats | undefined, k: Counted): number {
  if (!stats) return 0;
  return k === 'leasesLost' ? (stats.leaseLost ? 1 : 0) : stats[k];
}

export class JoinPoint {
  tasks: TaskGroup | undefined;
  lookAhead = true;
  joins = 0;
  /** What the probe and the finished rounds processed (the status and health counters). */
  probe: DrainStats | undefined;
  private readonly earlier: Record<Counted, number> = { processed: 0, duplicates: 0, extensions: 0, leasesLost: 0 };

  /** A round's task group starts: later wake-ups join it. */
  begin(tasks: TaskGroup): void {
    for (const k of COUNTED) this.earlier[k] += countOf(this.tasks?.stats, k);
    this.tasks = tasks;
  }

  /** Messages processed so far by this drain. */
  get processed(): number {
    return this.total('processed');
  }

  /** So far, in the probe and every round of this drain (leasesLost: rounds whose slot lease was lost). */
  total(k: Counted): number {
    return countOf(this.probe, k) + this.earlier[k] + countOf(this.tasks?.stats, k);
  }

  join(): boolean {
    // nudge() first: it wakes a task that is backing off after a failed receive.
    if (!this.tasks?.nudge() && !this.lookAhead) return false;
    this.joins++;
    return true;
  }
}
