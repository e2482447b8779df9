/**
 * One wake-up of one queue. First a probe: one receive, without a drain slot, and the
 * processing of what it returned. Work that fits in one receive (a small batch trickling in)
 * ends there, after one look at the queue. Only a drain that must go on (the probe came back
 * full, or a later wake-up joined it) takes a slot, runs the dequeue tasks, gives the slot
 * back, and then looks at the queue once more. That last look closes the lost-wake-up race:
 * work may have been enqueued (and its event consumed by a wake-up that found no free slot)
 * while our last task was exiting.
 */
import { ensureError } from '../errors';
import type { Clock, DrainQueue, DrainSlots, HeldSlot, Logger, MessageProcessor } from '../ports';
import { retryDecision } from '../retry/transient';
import { DequeueTasks, type DrainStats, emptyStats, type TaskCountRule, type TaskOptions } from './dequeue-tasks';
import { BatchHandler } from './handle-batch';

export type { TaskCountRule } from './dequeue-tasks';

/** One task per `messagesPerTask` queued messages, at least one, at most `maxTasks`. */
export function perMessagesRule(messagesPerTask: number, maxTasks: number): TaskCountRule {
  return (depth) => Math.max(1, Math.min(maxTasks, Math.ceil(Math.max(0, depth) / messagesPerTask)));
}

export interface DrainOptions extends Omit<TaskOptions, 'deadline'> {
  /** How long this wake-up may take work, in ms (stop before the function timeout). */
  budgetMs: number;
}

export interface DrainHooks {
  /**
   * Hand work over to a later wake-up (WorkDetected for this queue), now or after a delay;
   * 'busy' marks the look-again after finding every slot held (in case a holder crashed).
   */
  continuation(delayMs: number, reason?: 'busy'): Promise<void>;
  /**
   * A slot is held, before the round's tasks start (the fan-out decision). It reads the depth
   * itself, only when it needs it; a failure fails the round like a failed receive.
   */
  acquired?(slot: HeldSlot, round: number): Promise<void>;
  /**
   * Every slot held: 'hand-over' (the default) leaves a continuation for after a crashed
   * holder's lease; 'leave' just returns (a fan-out event: the holders cover the queue).
   */
  readonly onSlotsBusy?: 'hand-over' | 'leave';
  /** Start with the slot-less probe. @defaultValue true (false for a fan-out event: the queue is known to be deep) */
  readonly probe?: boolean;
}

/**
 * Where later wake-ups of this process join a drain in progress (DrainCoordinator). A join is
 * accepted only while the drain is certain to look at the queue afterwards: its tasks will
 * receive again (nudge), or its next look has not started yet.
 */
export class JoinPoint {
  tasks: DequeueTasks | undefined;
  lookAhead = true;
  joins = 0;
  /** What the probe and the finished rounds processed (the status and health counters). */
  probe: DrainStats | undefined;
  private earlier = 0;

  /** A round's task group starts: later wake-ups join it. */
  begin(tasks: DequeueTasks): void {
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

export type DrainOutcome =
  | { kind: 'slots-busy'; probe: DrainStats }
  | { kind: 'drained'; probe: DrainStats; rounds: number; stats: DrainStats[]; continuation?: 'now' | 'delayed' };

type Look = 'empty' | 'visible' | 'in-flight';

/**
 * The closing look. The approximate count is never below the real one, so 0 settles it in one
 * request; only a non-zero count needs the peek that tells visible work from messages in flight
 * (a failed processor's, or a crashed host's, which come back after the visibility timeout).
 */
async function look(queue: DrainQueue, join: JoinPoint): Promise<Look> {
  // From here on a wake-up must drain itself: this look may already be on its way.
  join.lookAhead = false;
  if ((await queue.depth()) === 0) return 'empty';
  return (await queue.hasVisible()) ? 'visible' : 'in-flight';
}

export async function drainQueue(
  queue: DrainQueue,
  processor: MessageProcessor,
  slots: DrainSlots,
  hooks: DrainHooks,
  clock: Clock,
  log: Logger,
  options: DrainOptions,
  join: JoinPoint = new JoinPoint(),
): Promise<DrainOutcome> {
  const deadline = clock.now() + options.budgetMs;
  const rounds: DrainStats[] = [];
  const probe = emptyStats();
  join.probe = probe;
  const drained = (continuation?: 'now' | 'delayed'): DrainOutcome => ({ kind: 'drained', probe, rounds: rounds.length, stats: rounds, ...(continuation ? { continuation } : {}) });
  const handOver = async (delayMs: number): Promise<DrainOutcome> => {
    try {
      await hooks.continuation(delayMs);
    } catch (e) {
      log.error(`${queue.name}: continuation event could not be published: ${ensureError(e).message}`);
      throw e;
    }
    return drained(delayMs > 0 ? 'delayed' : 'now');
  };
  // Storage unreachable (throttled, 5xx, sockets): don't fail the event into a tight redelivery
  // loop; hand over to a wake-up no sooner than the retry table says. Anything else is thrown.
  const handOverLater = (e: unknown, what: string): Promise<DrainOutcome> => {
    const decision = retryDecision(e);
    if (!decision.retry) throw e;
    log.warn(`${queue.name}: ${what}, handing over with a delay: ${ensureError(e).message}`);
    return handOver(Math.max(decision.waitMs ?? 0, options.visibilityTimeoutSeconds * 1000));
  };
  const stopping = (): boolean => clock.now() >= deadline || options.signal?.aborted === true;

  let escalate = hooks.probe === false;
  if (!escalate && !stopping()) {
    try {
      const got = await queue.receive(options.batchSize, options.visibilityTimeoutSeconds);
      probe.receives++;
      if (got.length === 0) probe.emptyReceives++;
      else await new BatchHandler(queue, processor, log, options.maxDequeueCount, probe).handle(got);
      escalate = got.length >= options.batchSize;
    } catch (e) {
      // Let the dequeue tasks retry it, with their back-off.
      probe.receiveErrors++;
      log.warn(`${queue.name}: probe receive failed: ${ensureError(e).message}`);
      escalate = true;
    }
  }
  join.lookAhead = false;
  // A wake-up that joined during the probe counts on this drain: go on, with a slot.
  if (!escalate && join.joins === 0) {
    let seen: Look;
    try {
      seen = await look(queue, join);
    } catch (e) {
      return handOverLater(e, 'queue unreachable');
    }
    if (seen === 'in-flight') return handOver(options.visibilityTimeoutSeconds * 1000);
    if (seen === 'visible' && stopping()) return handOver(0);
    if (seen === 'empty') return drained();
  }

  // Bounded: each round needs the slot and time left; rounds repeat only while the re-check finds work.
  for (let round = 0; round < 1000; round++) {
    join.lookAhead = true;
    let slot;
    try {
      slot = await slots.acquire(queue.name);
    } catch (e) {
      return handOverLater(e, 'drain slot unavailable');
    }
    if (!slot) {
      join.lookAhead = false;
      // After a round of ours, the holders took their slots after our release: they see the work.
      if (round > 0) return drained();
      // Every slot is held. A live holder re-checks the queue after releasing it; a crashed one
      // never will, so come back once its lease could have expired.
      if (hooks.onSlotsBusy !== 'leave') await hooks.continuation(slots.holdLimitMs + 1000, 'busy');
      return { kind: 'slots-busy', probe };
    }
    let stats: DrainStats;
    try {
      if (hooks.acquired) await hooks.acquired(slot, round);
      const tasks = new DequeueTasks(queue, processor, clock, log, { ...options, deadline });
      join.begin(tasks);
      // One task; a full receive sizes the group from the depth (see TaskOptions.taskCount).
      stats = await tasks.run(1);
      rounds.push(stats);
    } catch (e) {
      await slot.release();
      return handOverLater(e, 'queue unreachable');
    }
    await slot.release();
    log.info(`${queue.name}: drain round ${round + 1}: ${stats.processed} processed, ${stats.failed} failed, ${stats.poisoned} poisoned, ${stats.receives} receives by ${stats.tasksStarted} tasks`);

    // Re-check after releasing the slot: an event may have arrived while we held it.
    let seen: Look;
    try {
      seen = await look(queue, join);
    } catch (e) {
      return handOverLater(e, 're-check failed');
    }
    if (seen === 'visible' && !stats.stoppedByBudget && !stopping()) continue;
    if (seen === 'visible') return handOver(0);
    // Nothing visible, but messages in flight come back after the visibility timeout with nobody
    // awake to take them: schedule a wake-up.
    if (seen === 'in-flight') return handOver(options.visibilityTimeoutSeconds * 1000);
    return drained();
  }
  return handOver(0);
}
