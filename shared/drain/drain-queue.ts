/**
 * One wake-up of one queue: take a drain slot, run the dequeue tasks, give the slot back,
 * then look at the queue once more. That last look closes the lost-wake-up race: work may
 * have been enqueued (and its event consumed by a wake-up that found no free slot) while
 * our last task was exiting.
 */
import { ensureError } from '../errors';
import type { Clock, DrainQueue, DrainSlots, HeldSlot, Logger, MessageProcessor } from '../ports';
import { retryDecision } from '../retry/transient';
import { DequeueTasks, type DrainStats, type TaskOptions } from './dequeue-tasks';

/** How many dequeue tasks a drain starts for a queue of a given depth. */
export type TaskCountRule = (depth: number) => number;

/** One task per `messagesPerTask` queued messages, at least one, at most `maxTasks`. */
export function perMessagesRule(messagesPerTask: number, maxTasks: number): TaskCountRule {
  return (depth) => Math.max(1, Math.min(maxTasks, Math.ceil(Math.max(0, depth) / messagesPerTask)));
}

export interface DrainOptions extends Omit<TaskOptions, 'deadline'> {
  /** How long this wake-up may take work, in ms (stop before the function timeout). */
  budgetMs: number;
  taskCount: TaskCountRule;
}

export interface DrainHooks {
  /**
   * Hand work over to a later wake-up (WorkDetected for this queue), now or after a delay;
   * 'busy' marks the look-again after finding every slot held (in case a holder crashed).
   */
  continuation(delayMs: number, reason?: 'busy'): Promise<void>;
  /** Each round's task group as it starts, so a later wake-up can join it. */
  started?(tasks: DequeueTasks): void;
  /** A slot is held and the depth read, before the round's tasks start (the fan-out decision). */
  acquired?(slot: HeldSlot, depth: number, round: number): Promise<void>;
  /**
   * Every slot held: 'hand-over' (the default) leaves a continuation for after a crashed
   * holder's lease; 'leave' just returns (a fan-out event: the holders cover the queue).
   */
  onSlotsBusy?: 'hand-over' | 'leave';
}

export type DrainOutcome =
  | { kind: 'slots-busy' }
  | { kind: 'drained'; rounds: number; stats: DrainStats[]; continuation?: 'now' | 'delayed' };

export async function drainQueue(
  queue: DrainQueue,
  processor: MessageProcessor,
  slots: DrainSlots,
  hooks: DrainHooks,
  clock: Clock,
  log: Logger,
  options: DrainOptions,
): Promise<DrainOutcome> {
  const deadline = clock.now() + options.budgetMs;
  const rounds: DrainStats[] = [];
  // Storage unreachable (throttled, 5xx, sockets): don't fail the event into a tight redelivery
  // loop; hand over to a wake-up no sooner than the retry table says. Anything else is thrown.
  const handOverLater = (e: unknown, what: string): Promise<DrainOutcome> => {
    const decision = retryDecision(e);
    if (!decision.retry) throw e;
    log.warn(`${queue.name}: ${what}, handing over with a delay: ${ensureError(e).message}`);
    return handOver(hooks, log, queue, rounds, Math.max(decision.waitMs ?? 0, options.visibilityTimeoutSeconds * 1000));
  };
  // Bounded: each round needs the slot and time left; rounds repeat only while the re-check finds work.
  for (let round = 0; round < 1000; round++) {
    let slot;
    try {
      slot = await slots.acquire(queue.name);
    } catch (e) {
      return handOverLater(e, 'drain slot unavailable');
    }
    if (!slot) {
      if (round > 0) return { kind: 'drained', rounds: round, stats: rounds };
      // Every slot is held. A live holder re-checks the queue after releasing it; a crashed one
      // never will, so come back once its lease could have expired.
      if (hooks.onSlotsBusy !== 'leave') await hooks.continuation(slots.holdLimitMs + 1000, 'busy');
      return { kind: 'slots-busy' };
    }
    let stats: DrainStats;
    try {
      const depth = await queue.depth();
      await hooks.acquired?.(slot, depth, round);
      const tasks = new DequeueTasks(queue, processor, clock, log, { ...options, deadline });
      hooks.started?.(tasks);
      stats = await tasks.run(options.taskCount(depth));
      rounds.push(stats);
    } catch (e) {
      await slot.release();
      return handOverLater(e, 'queue unreachable');
    }
    await slot.release();
    log.info(`${queue.name}: drain round ${round + 1}: ${stats.processed} processed, ${stats.failed} failed, ${stats.poisoned} poisoned, ${stats.receives} receives by ${stats.tasksStarted} tasks`);

    // Re-check after releasing the slot: an event may have arrived while we held it.
    let visible: boolean;
    let inFlight: boolean;
    try {
      visible = await queue.hasVisible();
      inFlight = !visible && (await queue.depth()) > 0;
    } catch (e) {
      return handOverLater(e, 're-check failed');
    }
    if (visible && !stats.stoppedByBudget && clock.now() < deadline && !options.signal?.aborted) continue;
    if (visible) return handOver(hooks, log, queue, rounds, 0);
    // Nothing visible, but messages in flight (a failed processor's, or a crashed host's) come
    // back after the visibility timeout with nobody awake to take them: schedule a wake-up.
    if (inFlight) return handOver(hooks, log, queue, rounds, options.visibilityTimeoutSeconds * 1000);
    return { kind: 'drained', rounds: rounds.length, stats: rounds };
  }
  return handOver(hooks, log, queue, rounds, 0);
}

async function handOver(hooks: DrainHooks, log: Logger, queue: DrainQueue, rounds: DrainStats[], delayMs: number): Promise<DrainOutcome> {
  try {
    await hooks.continuation(delayMs);
  } catch (e) {
    log.error(`${queue.name}: continuation event could not be published: ${ensureError(e).message}`);
    throw e;
  }
  return { kind: 'drained', rounds: rounds.length, stats: rounds, continuation: delayMs > 0 ? 'delayed' : 'now' };
}
