/**
 * A bounded fan-out of dequeue tasks over one queue. Each task receives up to a batch,
 * processes it, deletes only what succeeded, and backs off when the queue is empty; it
 * exits when its back-off reaches the maximum, or when the time budget is spent.
 *
 * The group is an object with an explicit state, as pg-boss's Worker is:
 *   created → running → stopping (budget spent or shutdown) → stopped (last task gone).
 * A later wake-up for the same queue joins a running group through nudge().
 */
import { ensureError, PermanentError } from '../errors';
import type { Clock, DrainQueue, Logger, MessageProcessor, QueueMessage } from '../ports';
import { retryDecision } from '../retry/transient';
import { backoffDelay } from './backoff';

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

export type TaskGroupState = 'created' | 'running' | 'stopping' | 'stopped';

function latch(): { promise: Promise<void>; open: () => void } {
  let open = (): void => {};
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

export class DequeueTasks {
  private phase: TaskGroupState = 'created';
  readonly stats: DrainStats = { tasksStarted: 0, peakTasks: 0, receives: 0, emptyReceives: 0, processed: 0, failed: 0, poisoned: 0, sleeps: [], receiveErrors: 0, stoppedByBudget: false };
  private readonly running = new Set<Promise<void>>();
  /** Tasks inside their loop, counted synchronously at entry and exit (`running` updates a microtask later). */
  private live = 0;
  /** Bumped by every nudge: a task that sees it change resets its back-off. */
  private generation = 0;
  /** Settles on the next nudge, waking every sleeping task; replaced after each. */
  private nudged = latch();
  /** Shutdown wakes sleepers too, so they see the signal now rather than after their back-off. */
  private readonly aborted: Promise<void>;
  private readonly onAbort: () => void;

  constructor(
    private readonly queue: DrainQueue,
    private readonly processor: MessageProcessor,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly options: TaskOptions,
  ) {
    let wake = (): void => {};
    this.aborted = new Promise<void>((r) => (wake = r));
    this.onAbort = wake;
    // Removed when the group stops: the signal is the process's, and outlives every group.
    options.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  get state(): TaskGroupState {
    return this.phase;
  }

  /** Starts `initialTasks` (capped) and resolves with the stats once the last task has exited. */
  async run(initialTasks: number): Promise<DrainStats> {
    if (this.phase !== 'created') throw new Error(`dequeue tasks already ${this.phase}`);
    this.phase = 'running';
    for (let i = 0; i < Math.min(initialTasks, this.options.maxTasks); i++) this.start();
    while (this.running.size > 0) await Promise.race(this.running);
    this.phase = 'stopped';
    this.options.signal?.removeEventListener('abort', this.onAbort);
    return this.stats;
  }

  /**
   * A new event for this queue: wake sleeping tasks and reset their back-off. True when a
   * live task will receive again after this call (the event is covered); false when none
   * is left, so the caller must drain itself.
   */
  nudge(): boolean {
    if (this.phase !== 'running' || this.live === 0) return false;
    this.generation++;
    const fire = this.nudged;
    this.nudged = latch();
    fire.open();
    return true;
  }

  private start(): void {
    if (this.running.size >= this.options.maxTasks) return;
    this.stats.tasksStarted++;
    const p: Promise<void> = this.task()
      .catch((e) => this.log.error(`${this.queue.name}: dequeue task crashed: ${ensureError(e).message}`))
      .finally(() => this.running.delete(p));
    this.running.add(p);
    this.stats.peakTasks = Math.max(this.stats.peakTasks, this.running.size);
  }

  private async task(): Promise<void> {
    this.live++;
    try {
      await this.loop();
    } finally {
      this.live--;
    }
  }

  /** Whether to stop taking work: the budget is spent or the host is shutting down. */
  private stopNow(): boolean {
    if (this.clock.now() < this.options.deadline && !this.options.signal?.aborted) return false;
    this.phase = 'stopping';
    this.stats.stoppedByBudget = true;
    return true;
  }

  private async loop(): Promise<void> {
    const { options, clock, queue } = this;
    let idle = 0;
    for (;;) {
      const seen = this.generation;
      if (this.stopNow()) return;
      let messages: QueueMessage[];
      let minWait = 0;
      try {
        messages = await queue.receive(options.batchSize, options.visibilityTimeoutSeconds);
        this.stats.receives++;
      } catch (e) {
        // Back off on this queue only; other queues' drains are unaffected.
        const decision = retryDecision(e);
        this.stats.receiveErrors++;
        minWait = decision.waitMs ?? 0;
        this.log.warn(`${queue.name}: receive failed (${decision.retry ? 'transient' : 'not transient'}), backing off: ${ensureError(e).message}`);
        messages = [];
      }
      if (messages.length === 0) {
        this.stats.emptyReceives++;
        if (this.generation !== seen) {
          // A wake-up joined while this receive was in flight: its work may be just behind it.
          idle = 0;
          continue;
        }
        const delay = Math.max(minWait, backoffDelay(idle, options.minIdleMs, options.maxIdleMs, () => clock.random()));
        if (delay >= options.maxIdleMs || options.signal?.aborted) return; // reached max idle: this task is done
        idle++;
        const sleep = Math.min(delay, Math.max(0, options.deadline - clock.now()));
        this.stats.sleeps.push(sleep);
        await Promise.race([clock.sleep(sleep), this.nudged.promise, this.aborted]);
        if (this.generation !== seen) idle = 0;
        continue;
      }
      idle = 0;
      // A full batch means more is waiting: scale up (the QueueWorkDetected idea).
      if (messages.length >= options.batchSize) this.start();
      await this.handleBatch(messages);
    }
  }

  private async handleBatch(messages: QueueMessage[]): Promise<void> {
    const results = await Promise.all(messages.map((m) => this.handle(m)));
    const ok = messages.filter((_, i) => results[i]);
    if (ok.length === 0) return;
    if (this.processor.afterBatch) {
      try {
        await this.processor.afterBatch();
      } catch (e) {
        // Not deleting: the messages reappear and are reprocessed (idempotently), which retries the hook.
        this.stats.failed += ok.length;
        this.log.warn(`${this.queue.name}: after-batch step failed, ${ok.length} messages will be redelivered: ${ensureError(e).message}`);
        return;
      }
    }
    await Promise.all(
      ok.map(async (m) => {
        try {
          await this.queue.delete(m);
          this.stats.processed++;
        } catch (e) {
          // Processed but not deleted: it comes back and is processed again, idempotently.
          this.log.warn(`${this.queue.name}: delete of ${m.id} failed: ${ensureError(e).message}`);
        }
      }),
    );
  }

  /** True when the message was processed and may be deleted. */
  private async handle(m: QueueMessage): Promise<boolean> {
    const { maxDequeueCount } = this.options;
    try {
      if (m.dequeueCount > maxDequeueCount) {
        await this.poison(m, `dequeued ${m.dequeueCount} times (max ${maxDequeueCount})`);
        return false;
      }
      await this.processor.process(m);
      return true;
    } catch (e) {
      const err = ensureError(e);
      if (err instanceof PermanentError) {
        await this.poison(m, err.message).catch((pe) => this.log.error(`${this.queue.name}: poisoning ${m.id} failed: ${ensureError(pe).message}`));
      } else {
        this.stats.failed++;
        this.log.warn(`${this.queue.name}: message ${m.id} failed (attempt ${m.dequeueCount}), it reappears after the visibility timeout: ${err.message}`);
      }
      return false;
    }
  }

  private async poison(m: QueueMessage, reason: string): Promise<void> {
    await this.queue.poison(m, reason);
    this.stats.poisoned++;
    this.log.warn(`${this.queue.name}: message ${m.id} moved to poison: ${reason}`);
    await this.processor.onPoison?.(m, reason);
  }
}
