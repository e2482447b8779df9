/**
 * Where later wake-ups of this process join a drain in progress (DrainCoordinator). A join is
 * accepted only while the drain is certain to look at the queue afterwards: its tasks will
 * receive again (nudge), or its next look has not started yet.
 */
import type { DrainStats } from './drain-stats';
import type { TaskGroup } from './task-group';

export class JoinPoint {
  tasks: TaskGroup | undefined;
  lookAhead = true;
  joins = 0;
  /** What the probe and the finished rounds processed (the status and health counters). */
  probe: DrainStats | undefined;
  private earlier = 0;

  /** A round's task group starts: later wake-ups join it. */
  begin(tasks: TaskGroup): void {
    this.earlier += this.tasks?.stats.processed ?? 0;
    this.tasks = tasks;
  }

  /** Messages processed so far by this drain. */
  get processed(): number {
    return (this.probe?.processed ?? 0) + this.earlier + (this.tasks?.stats.processed ?? 0);
  }

  join(): boolean {
    // nudge() first: it wakes a task that is backing off after a failed receive.
    if (!this.tasks?.nudge() && !this.lookAhead) return false;
    this.joins++;
    return true;
  }
}
