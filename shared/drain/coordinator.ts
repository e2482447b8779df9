/**
 * Every drain of this process goes through here. A wake-up for a queue that a live drain
 * here is already working joins it (its tasks wake and reset their back-off), so a burst
 * of events costs no extra slots or receives; otherwise it drains the queue itself.
 *
 * Fan-out (docs/DESIGN.md, "Scale-out"): the drain holding a deep input queue's slot 0 asks
 * for more drains by publishing fan-out events. One that reaches an instance already draining
 * the queue joins and stays held (its Service Bus message locked) until that drain ends, so
 * the platform's target-based scaling counts it while this instance runs one drain per queue;
 * one that reaches another instance drains there with its own slot.
 */
import type { Tuning } from '../config/settings';
import { ensureError } from '../errors';
import type { Role } from '../names';
import type { Clock, DrainSlots, HeldSlot, Logger, MessageProcessor, QueueStore } from '../ports';
import type { DequeueTasks } from './dequeue-tasks';
import { type DrainOptions, type DrainOutcome, drainQueue, perMessagesRule, type TaskCountRule } from './drain-queue';

export type DrainResult =
  | DrainOutcome
  | { kind: 'joined' }
  /** A fan-out event held while this process drained its queue. */
  | { kind: 'held' }
  /** A fan-out event that found nothing visible: it is dropped after one peek. */
  | { kind: 'fan-out-idle' };

export interface CoordinatorDeps {
  queues: QueueStore;
  slots: DrainSlots;
  processors: Record<Role, MessageProcessor>;
  /** Publishes a continuation event for the queue (now, or after a delay). */
  continuation(queue: string, delayMs: number): Promise<void>;
  /** Publishes `count` fan-out events for the queue. */
  fanOut(queue: string, count: number): Promise<void>;
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
    ...(signal ? { signal } : {}),
  };
}

/** Drains a queue of this depth wants across all instances: one per messagesPerDrain, 1…drainSlots. */
export function fanOutRule(tuning: Tuning): TaskCountRule {
  return perMessagesRule(tuning.messagesPerDrain, tuning.drainSlots);
}

/** What this process has done, for GET /api/health (no Storage request). */
export interface DrainActivity {
  inProgress: number;
  /** Fan-out events held right now. */
  held: number;
  /** Queue messages processed and deleted by this process, by role. */
  processed: Record<Role, number>;
  /** Fan-out events this process published. */
  fanOutPublished: number;
}

/** A drain invocation while it runs: its current task group, and what earlier rounds processed. */
interface LiveDrain {
  role: Role;
  tasks?: DequeueTasks;
  earlierRounds: number;
  ended: Promise<void>;
}

export class DrainCoordinator {
  /** Aborted by beginShutdown(): running drains stop taking work and hand the rest over. */
  private readonly stopping = new AbortController();
  private readonly live = new Map<string, LiveDrain>();
  private readonly running = new Set<LiveDrain>();
  private readonly options: DrainOptions;
  private readonly wanted: TaskCountRule;
  private held = 0;
  private fanOutPublished = 0;
  private readonly processed: Record<Role, number> = { input: 0, output: 0 };

  constructor(private readonly deps: CoordinatorDeps) {
    this.options = drainOptions(deps.tuning, this.stopping.signal);
    this.wanted = fanOutRule(deps.tuning);
  }

  async drain(queue: string, role: Role, fanOut = false): Promise<DrainResult> {
    const current = this.live.get(queue);
    if (current?.tasks?.nudge()) {
      if (!fanOut) return { kind: 'joined' };
      this.held++;
      try {
        await current.ended;
      } finally {
        this.held--;
      }
      return { kind: 'held' };
    }
    const { queues, slots, processors, clock, log } = this.deps;
    if (fanOut && !(await queues.queue(queue).hasVisible())) return { kind: 'fan-out-idle' };
    let end = (): void => {};
    const entry: LiveDrain = { role, earlierRounds: 0, ended: new Promise<void>((r) => (end = r)) };
    this.running.add(entry);
    // Latest drain wins the entry; an older one still running simply stops being joined.
    this.live.set(queue, entry);
    try {
      return await drainQueue(
        queues.queue(queue),
        processors[role],
        slots,
        {
          continuation: (delayMs) => this.deps.continuation(queue, delayMs),
          started: (tasks) => {
            entry.earlierRounds += entry.tasks?.stats.processed ?? 0;
            entry.tasks = tasks;
          },
          acquired: (slot, depth, round) => this.lead(queue, role, slot, depth, round),
          onSlotsBusy: fanOut ? 'leave' : 'hand-over',
        },
        clock,
        log,
        this.options,
      );
    } finally {
      this.processed[role] += entry.earlierRounds + (entry.tasks?.stats.processed ?? 0);
      this.running.delete(entry);
      if (this.live.get(queue) === entry) this.live.delete(queue);
      end();
    }
  }

  /**
   * The holder of an input queue's slot 0 asks, once per invocation, for the drains the depth
   * wants beyond itself. A failed publish only costs scale-out, never work: it is logged.
   */
  private async lead(queue: string, role: Role, slot: HeldSlot, depth: number, round: number): Promise<void> {
    if (role !== 'input' || slot.index !== 0 || round > 0) return;
    const extra = this.wanted(depth) - 1;
    if (extra <= 0) return;
    try {
      await this.deps.fanOut(queue, extra);
      this.fanOutPublished += extra;
      this.deps.log.info(`${queue}: depth ${depth}, fan-out of ${extra} more drain(s)`);
    } catch (e) {
      this.deps.log.warn(`${queue}: fan-out events could not be published: ${ensureError(e).message}`);
    }
  }

  /** Drain invocations in progress in this process (tests assert none is left behind). */
  get inProgress(): number {
    return this.running.size;
  }

  activity(): DrainActivity {
    const processed = { ...this.processed };
    for (const d of this.running) processed[d.role] += d.earlierRounds + (d.tasks?.stats.processed ?? 0);
    return { inProgress: this.running.size, held: this.held, processed, fanOutPublished: this.fanOutPublished };
  }

  /** Graceful stop: drains finish their current batch, then hand the rest over. */
  beginShutdown(): void {
    this.stopping.abort();
  }
}
