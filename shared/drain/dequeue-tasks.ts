/**
 * A bounded fan-out of dequeue tasks over one queue. Each task receives up to a batch,
 * processes it, deletes only what succeeded, and backs off when the queue is empty; it
 * exits when its back-off reaches the maximum, or when the time budget is spent.
 */
import { ensureError, PermanentError } from '../errors';
import { retryDecision } from '../retry/transient';
import { backoffDelay } from './backoff';
import type { Clock, DrainLogger, DrainQueue, MessageProcessor, QueueMessage } from './types';

export interface TaskOptions {
  batchSize: number;
  visibilityTimeoutSeconds: number;
  minIdleMs: number;
  maxIdleMs: number;
  maxTasks: number;
  maxDequeueCount: number;
  /** Epoch ms after which no task takes new work. */
  deadline: number;
  /** Host shutdown: stop taking work now, as if the budget were spent. */
  signal?: AbortSignal;
  /** Filled in while tasks run: lets a later wake-up for this queue join them. */
  control?: DrainControl;
}

export interface DrainControl {
  /**
   * A new event for this queue: wake sleeping tasks and reset their back-off. True when a
   * live task will receive again after this call (the event is covered); false when none
   * is left, so the caller must drain itself.
   */
  nudge?: () => boolean;
}

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
  /** Receives that failed (throttling, 5xx, sockets): they back off like empty receives. */
  receiveErrors: number;
  stoppedByBudget: boolean;
}

export async function runDequeueTasks(
  queue: DrainQueue,
  processor: MessageProcessor,
  clock: Clock,
  log: DrainLogger,
  options: TaskOptions,
  initialTasks: number,
): Promise<DrainStats> {
  const stats: DrainStats = { tasksStarted: 0, peakTasks: 0, receives: 0, emptyReceives: 0, processed: 0, failed: 0, poisoned: 0, sleeps: [], receiveErrors: 0, stoppedByBudget: false };
  const running = new Set<Promise<void>>();
  // Counted synchronously at task entry and exit (the running set updates a microtask later).
  let live = 0;
  let generation = 0;
  let wake: () => void = () => {};
  let woken = new Promise<void>((r) => (wake = r));
  // Shutdown wakes sleepers too, so they see the signal now rather than after their back-off.
  const aborted = new Promise<void>((r) => options.signal?.addEventListener('abort', () => r(), { once: true }));
  if (options.control) {
    options.control.nudge = () => {
      if (live === 0) return false;
      generation++;
      const fire = wake;
      woken = new Promise<void>((r) => (wake = r));
      fire();
      return true;
    };
  }

  const poison = async (m: QueueMessage, reason: string): Promise<void> => {
    await queue.poison(m, reason);
    stats.poisoned++;
    log.warn(`${queue.name}: message ${m.id} moved to poison: ${reason}`);
    await processor.onPoison?.(m, reason);
  };

  const handle = async (m: QueueMessage): Promise<boolean> => {
    try {
      if (m.dequeueCount > options.maxDequeueCount) {
        await poison(m, `dequeued ${m.dequeueCount} times (max ${options.maxDequeueCount})`);
        return false;
      }
      await processor.process(m);
      return true;
    } catch (e) {
      const err = ensureError(e);
      if (err instanceof PermanentError) {
        await poison(m, err.message).catch((pe) => log.error(`${queue.name}: poisoning ${m.id} failed: ${ensureError(pe).message}`));
      } else {
        stats.failed++;
        log.warn(`${queue.name}: message ${m.id} failed (attempt ${m.dequeueCount}), it reappears after the visibility timeout: ${err.message}`);
      }
      return false;
    }
  };

  const handleBatch = async (messages: QueueMessage[]): Promise<void> => {
    const results = await Promise.all(messages.map(handle));
    const ok = messages.filter((_, i) => results[i]);
    if (ok.length === 0) return;
    if (processor.afterBatch) {
      try {
        await processor.afterBatch();
      } catch (e) {
        // Not deleting: the messages reappear and are reprocessed (idempotently), which retries the hook.
        stats.failed += ok.length;
        log.warn(`${queue.name}: after-batch step failed, ${ok.length} messages will be redelivered: ${ensureError(e).message}`);
        return;
      }
    }
    await Promise.all(
      ok.map(async (m) => {
        try {
          await queue.delete(m);
          stats.processed++;
        } catch (e) {
          // Processed but not deleted: it comes back and is processed again, idempotently.
          log.warn(`${queue.name}: delete of ${m.id} failed: ${ensureError(e).message}`);
        }
      }),
    );
  };

  const task = async (): Promise<void> => {
    live++;
    try {
      await loop();
    } finally {
      live--;
    }
  };

  const loop = async (): Promise<void> => {
    let idle = 0;
    for (;;) {
      const seen = generation;
      if (clock.now() >= options.deadline || options.signal?.aborted) {
        stats.stoppedByBudget = true;
        return;
      }
      let messages: QueueMessage[];
      let minWait = 0;
      try {
        messages = await queue.receive(options.batchSize, options.visibilityTimeoutSeconds);
        stats.receives++;
      } catch (e) {
        // Back off on this queue only; other queues' drains are unaffected.
        const decision = retryDecision(e);
        stats.receiveErrors++;
        minWait = decision.waitMs ?? 0;
        log.warn(`${queue.name}: receive failed (${decision.retry ? 'transient' : 'not transient'}), backing off: ${ensureError(e).message}`);
        messages = [];
      }
      if (messages.length === 0) {
        stats.emptyReceives++;
        if (generation !== seen) {
          // A wake-up joined while this receive was in flight: its work may be just behind it.
          idle = 0;
          continue;
        }
        const delay = Math.max(minWait, backoffDelay(idle, options.minIdleMs, options.maxIdleMs, () => clock.random()));
        if (delay >= options.maxIdleMs || options.signal?.aborted) return; // reached max idle: this task is done
        idle++;
        const sleep = Math.min(delay, Math.max(0, options.deadline - clock.now()));
        stats.sleeps.push(sleep);
        await Promise.race([clock.sleep(sleep), woken, aborted]);
        if (generation !== seen) idle = 0;
        continue;
      }
      idle = 0;
      // A full batch means more is waiting: scale up (the QueueWorkDetected idea).
      if (messages.length >= options.batchSize) start();
      await handleBatch(messages);
    }
  };

  function start(): void {
    if (running.size >= options.maxTasks) return;
    stats.tasksStarted++;
    const p: Promise<void> = task()
      .catch((e) => log.error(`${queue.name}: dequeue task crashed: ${ensureError(e).message}`))
      .finally(() => running.delete(p));
    running.add(p);
    stats.peakTasks = Math.max(stats.peakTasks, running.size);
  }

  for (let i = 0; i < Math.min(initialTasks, options.maxTasks); i++) start();
  while (running.size > 0) await Promise.race(running);
  return stats;
}
