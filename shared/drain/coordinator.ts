/**
 * Every drain of this process goes through here. A wake-up for a queue that a live drain
 * here is already working joins it (its tasks wake and reset their back-off), so a burst
 * of events costs no extra slots or receives; otherwise it drains the queue itself.
 */
import type { Tuning } from '../config/settings';
import type { Role } from '../names';
import type { Clock, DrainSlots, Logger, MessageProcessor, QueueStore } from '../ports';
import type { DequeueTasks, TaskGroupState } from './dequeue-tasks';
import { type DrainOptions, type DrainOutcome, drainQueue, perMessagesRule } from './drain-queue';

export type DrainResult = DrainOutcome | { kind: 'joined' };

/** A drain of this process, as the status report shows it. */
export interface RunningDrain {
  queue: string;
  /** `starting` until its first round has a task group (slot taken, depth read). */
  state: TaskGroupState | 'starting';
  tasks: number;
}

export interface CoordinatorDeps {
  queues: QueueStore;
  slots: DrainSlots;
  processors: Record<Role, MessageProcessor>;
  /** Publishes a continuation event for the queue (now, or after a delay). */
  continuation(queue: string, delayMs: number): Promise<void>;
  clock: Clock;
  log: Logger;
  tuning: Tuning;
  /** Told the number of drains running whenever it changes (the status history records it). */
  onRunning?(count: number): void;
}

/** The drain options that follow from the settings. */
export function drainOptions(tuning: Tuning, signal?: AbortSignal): DrainOptions {
  return {
    batchSize: tuning.dequeueBatchSize,
    visibilityTimeoutSeconds: tuning.visibilityTimeoutSeconds,
    minIdleMs: tuning.minIdleMs,
    maxIdleMs: tuning.maxIdleMs,
    maxTasks: tuning.maxDequeueTasks,
    maxDequeueCount: tuning.maxDequeueCount,
    budgetMs: tuning.drainBudgetSeconds * 1000,
    taskCount: perMessagesRule(tuning.messagesPerTask, tuning.maxDequeueTasks),
    ...(signal ? { signal } : {}),
  };
}

/** The task group a drain is running now (replaced each round), for later wake-ups to join. */
interface LiveDrain {
  tasks?: DequeueTasks;
}

export class DrainCoordinator {
  /** Aborted by beginShutdown(): running drains stop taking work and hand the rest over. */
  private readonly stopping = new AbortController();
  private readonly live = new Map<string, LiveDrain>();
  private running = 0;
  private readonly options: DrainOptions;

  constructor(private readonly deps: CoordinatorDeps) {
    this.options = drainOptions(deps.tuning, this.stopping.signal);
  }

  async drain(queue: string, role: Role): Promise<DrainResult> {
    if (this.live.get(queue)?.tasks?.nudge()) return { kind: 'joined' };
    const entry: LiveDrain = {};
    this.running++;
    this.deps.onRunning?.(this.running);
    // Latest drain wins the entry; an older one still running simply stops being joined.
    this.live.set(queue, entry);
    try {
      const { queues, slots, processors, clock, log } = this.deps;
      return await drainQueue(
        queues.queue(queue),
        processors[role],
        slots,
        { continuation: (delayMs) => this.deps.continuation(queue, delayMs), started: (tasks) => (entry.tasks = tasks) },
        clock,
        log,
        this.options,
      );
    } finally {
      this.running--;
      this.deps.onRunning?.(this.running);
      if (this.live.get(queue) === entry) this.live.delete(queue);
    }
  }

  /** Drain invocations in progress in this process (tests assert none is left behind). */
  get inProgress(): number {
    return this.running;
  }

  /** The drain each queue is joined to now (an older one of the same queue still finishing is counted in inProgress only). */
  runningDrains(): RunningDrain[] {
    return [...this.live.entries()].map(([queue, d]) => ({ queue, state: d.tasks?.state ?? 'starting', tasks: d.tasks?.liveTasks ?? 0 }));
  }

  /** Graceful stop: drains finish their current batch, then hand the rest over. */
  beginShutdown(): void {
    this.stopping.abort();
  }
}
