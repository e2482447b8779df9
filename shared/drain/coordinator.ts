/**
 * Every drain of this process goes through here. A wake-up for a queue that a live drain
 * here will still look at joins it (see JoinPoint): its tasks wake and receive again, or its
 * next look at the queue sees the work. So a burst of events costs no extra slots or
 * receives; otherwise the wake-up drains the queue itself.
 */
import type { Tuning } from '../config/settings';
import type { Role } from '../names';
import type { Clock, DrainSlots, Logger, MessageProcessor, QueueStore } from '../ports';
import { type DrainOptions, type DrainOutcome, drainQueue, JoinPoint, perMessagesRule } from './drain-queue';

export type DrainResult = DrainOutcome | { kind: 'joined' };

export interface CoordinatorDeps {
  queues: QueueStore;
  slots: DrainSlots;
  processors: Record<Role, MessageProcessor>;
  /** Publishes a continuation event for the queue (now, or after a delay). */
  continuation(queue: string, delayMs: number): Promise<void>;
  clock: Clock;
  log: Logger;
  tuning: Tuning;
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
    // Every producer of these queues publishes WorkDetected after enqueueing (docs/DESIGN.md, Drainer).
    stopWhenDrained: true,
    ...(signal ? { signal } : {}),
  };
}

export class DrainCoordinator {
  /** Aborted by beginShutdown(): running drains stop taking work and hand the rest over. */
  private readonly stopping = new AbortController();
  private readonly live = new Map<string, JoinPoint>();
  private running = 0;
  private readonly options: DrainOptions;

  constructor(private readonly deps: CoordinatorDeps) {
    this.options = drainOptions(deps.tuning, this.stopping.signal);
  }

  async drain(queue: string, role: Role): Promise<DrainResult> {
    if (this.live.get(queue)?.join()) return { kind: 'joined' };
    const entry = new JoinPoint();
    this.running++;
    // Latest drain wins the entry; an older one still running simply stops being joined.
    this.live.set(queue, entry);
    try {
      const { queues, slots, processors, clock, log } = this.deps;
      return await drainQueue(
        queues.queue(queue),
        processors[role],
        slots,
        { continuation: (delayMs) => this.deps.continuation(queue, delayMs) },
        clock,
        log,
        this.options,
        entry,
      );
    } finally {
      entry.lookAhead = false;
      this.running--;
      if (this.live.get(queue) === entry) this.live.delete(queue);
    }
  }

  /** Drain invocations in progress in this process (tests assert none is left behind). */
  get inProgress(): number {
    return this.running;
  }

  /** Graceful stop: drains finish their current batch, then hand the rest over. */
  beginShutdown(): void {
    this.stopping.abort();
  }
}
