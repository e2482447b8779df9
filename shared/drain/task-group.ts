/**
 * The dequeue tasks of one drain round over one queue, bounded. Each task receives up to a
 * batch, processes it, deletes only what succeeded, and stops once the queue is drained: a
 * receive that comes back short of a full batch, or empty, unless a wake-up joined meanwhile.
 * Every producer enqueues first and publishes WorkDetected second, so a task has nothing to
 * wait for; only a failed receive backs off. All stop when the time budget is spent.
 *
 * The group has an explicit state, as pg-boss's Worker has:
 *   created → running → stopping (budget spent or shutdown) → stopped (last task gone).
 * A later wake-up for the same queue joins a running group through nudge().
 */
import { ensureError } from '../errors';
import type { Clock, DrainQueue, Logger, MessageProcessor, QueueMessage } from '../ports';
import { backoffDelay } from '../retry/backoff';
import { retryDecision } from '../retry/transient';
import { latch } from '../util/latch';
import { onAbort } from '../util/on-abort';
import { BatchHandler } from './batch-handler';
import { DrainCounts, type DrainStats } from './drain-counts';
import { ReceiveSizer } from './receive-sizer';
import type { TaskCountRule } from './task-count';

type TaskGroupState = 'created' | 'running' | 'stopping' | 'stopped';

export interface TaskOptions {
  batchSize: number;
  visibilityTimeoutSeconds: number;
  minIdleMs: number;
  maxIdleMs: number;
  maxTasks: number;
  maxDequeueCount: number;
  /** Seconds a message in a newer format stays invisible when handed back. @defaultValue 15 (HANDBACK_DELAY_SECONDS) */
  handbackDelaySeconds?: number;
  /** Epoch ms after which no task takes new work. */
  deadline: number;
  /** Host shutdown: stop taking work now, as if the budget were spent. */
  signal?: AbortSignal;
  /**
   * Sizes the group from the queue's depth, read once, when a receive first comes back full
   * (a deep queue); a drain of a few messages never pays for the read.
   */
  taskCount?: TaskCountRule;
  /**
   * Sizes each receive from the recent time per message (see ReceiveSizer); shared across the
   * drains of a stage. @defaultValue one of the group's own
   */
  sizer?: ReceiveSizer;
  /** The drain slot the group works under: once its lease is lost, no task takes new messages. */
  slot?: { readonly lost?: boolean };
}

export interface TaskGroupDeps {
  /** Where tasks receive, delete and poison. */
  queue: DrainQueue;
  /** What each message goes through. */
  processor: MessageProcessor;
  /** now, sleep (the back-off) and random (its jitter). */
  clock: Clock;
  log: Logger;
  options: TaskOptions;
  /** Where the group counts. @defaultValue counts of its own */
  counts?: DrainCounts;
}

export class TaskGroup {
  private phase: TaskGroupState = 'created';
  private readonly counts: DrainCounts;
  private readonly running = new Set<Promise<void>>();
  /** Tasks inside their loop, counted synchronously at entry and exit (`running` updates a microtask later). */
  private live = 0;
  /** Bumped by every nudge: a task that sees it change resets its back-off and receives again. */
  private generation = 0;
  /** Settles on the next nudge, waking every sleeping task; replaced after each. */
  private nudged = latch();
  /** Shutdown wakes sleepers too, so they see the signal now rather than after their back-off. */
  private readonly aborted = latch();
  private sized = false;
  private readonly batches: BatchHandler;
  private readonly sizer: ReceiveSizer;

  private readonly queue: DrainQueue;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly options: TaskOptions;

  constructor(deps: TaskGroupDeps) {
    ({ queue: this.queue, clock: this.clock, log: this.log, options: this.options } = deps);
    this.counts = deps.counts ?? new DrainCounts();
    this.sizer = deps.options.sizer ?? ReceiveSizer.forDrain(deps.options);
    this.batches = new BatchHandler({
      queue: deps.queue,
      processor: deps.processor,
      log: deps.log,
      maxDequeueCount: deps.options.maxDequeueCount,
      ...(deps.options.handbackDelaySeconds !== undefined
        ? { handbackDelaySeconds: deps.options.handbackDelaySeconds }
        : {}),
      counts: this.counts,
      visibilityTimeoutSeconds: deps.options.visibilityTimeoutSeconds,
      sizer: this.sizer,
      clock: deps.clock,
    });
  }

  /** Tasks inside their receive loop right now. */
  get liveTasks(): number {
    return this.live;
  }

  /** Starts `initialTasks` (capped) and resolves with the counts once the last task has exited. */
  async run(initialTasks: number): Promise<DrainStats> {
    if (this.phase !== 'created') throw new Error(`task group already ${this.phase}`);
    this.phase = 'running';
    // Removed again at the end: the signal lives as long as the process, groups do not, and
    // many run at once (onAbort keeps one listener on the signal for all of them).
    const stopWaiting = onAbort(this.options.signal, () => this.aborted.open());
    try {
      for (let i = 0; i < Math.min(initialTasks, this.options.maxTasks); i++) this.start();
      while (this.running.size > 0) await Promise.race(this.running);
    } finally {
      stopWaiting();
    }
    this.phase = 'stopped';
    return this.counts.snapshot();
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
    if (this.running.size >= this.options.maxTasks || this.phase !== 'running') return;
    this.counts.add('tasksStarted');
    const p: Promise<void> = this.loop()
      .catch((e) => this.log.error(`${this.queue.name}: dequeue task crashed: ${ensureError(e).message}`))
      .finally(() => this.running.delete(p));
    this.running.add(p);
    this.counts.running(this.running.size);
  }

  /** A full batch means more is waiting: one more task (the QueueWorkDetected idea), and once, as many as the depth asks for. */
  private scaleUp(): void {
    this.start();
    const rule = this.options.taskCount;
    if (!rule || this.sized) return;
    this.sized = true;
    this.queue.depth().then(
      (depth) => {
        for (let n = rule(depth) - this.running.size; n > 0 && this.phase === 'running'; n--) this.start();
      },
      (e: unknown) =>
        this.log.warn(`${this.queue.name}: depth for the task count unavailable: ${ensureError(e).message}`),
    );
  }

  /** Why no task may take more work now, if any: the slot is lost, or the budget is spent (or the host is shutting down). */
  private stopReason(): 'lease-lost' | 'budget' | undefined {
    // Another drain holds our slot now: taking more would put one drain too many on the queue.
    if (this.options.slot?.lost) return 'lease-lost';
    if (this.clock.now() >= this.options.deadline || this.options.signal?.aborted) return 'budget';
    return undefined;
  }

  /** The group stops taking work, for `reason`; its tasks exit as they see it. */
  private stop(reason: 'lease-lost' | 'budget'): void {
    this.phase = 'stopping';
    this.counts.mark(reason === 'lease-lost' ? 'leaseLost' : 'stoppedByBudget');
  }

  /**
   * The probe: the first receive of a drain, before it holds a slot, as one step of the same
   * loop (receive, handle, settle). 'full' when the drain must go on with a slot (the receive
   * came back full, or failed: the slot's tasks retry it with their back-off, or the process
   * holds all it can and a slot's tasks wait for room); 'short' when it took all it could see.
   */
  async probe(): Promise<'full' | 'short'> {
    if (this.phase !== 'created') throw new Error(`task group already ${this.phase}`);
    this.phase = 'running';
    try {
      const size = this.sizer.take();
      if (size === 0) return 'full';
      const { messages, failed, at } = await this.receive(size, 'probe');
      this.sizer.giveBack(size - messages.length);
      if (failed) return 'full';
      if (messages.length === 0) this.counts.add('emptyReceives');
      else await this.batches.handle(messages, at);
      return messages.length >= size ? 'full' : 'short';
    } catch (e) {
      // Let the slot's tasks retry it, with their back-off.
      this.counts.add('receiveErrors');
      this.log.warn(`${this.queue.name}: probe failed: ${ensureError(e).message}`);
      return 'full';
    } finally {
      this.phase = 'stopped';
    }
  }

  /**
   * Until a batch of the stage settles in this process, or the host shuts down. Something is
   * held whenever the hold limit is reached (a receive in flight, or a batch in work), and each
   * gives its messages back, so the wait ends; the deadline is checked after it.
   */
  private async waitForRoom(): Promise<void> {
    this.counts.add('holdWaits');
    await Promise.race([this.sizer.freedSoon(), this.aborted.promise]);
  }

  /** One receive; a failure counts and returns nothing, with the least wait the retry table asks for. */
  private async receive(
    size: number,
    what: 'probe' | 'task' = 'task',
  ): Promise<{ messages: QueueMessage[]; failed: boolean; minWait: number; at: number }> {
    const { options, queue } = this;
    const sent = this.clock.now();
    try {
      const messages = await queue.receive(size, options.visibilityTimeoutSeconds);
      this.counts.add('receives');
      return { messages, failed: false, minWait: 0, at: sent };
    } catch (e) {
      // Back off on this queue only; other queues' drains are unaffected.
      const decision = retryDecision(e);
      this.counts.add('receiveErrors');
      this.log.warn(
        what === 'probe'
          ? `${queue.name}: probe receive failed: ${ensureError(e).message}`
          : `${queue.name}: receive failed (${decision.retry ? 'transient' : 'not transient'}), backing off: ${ensureError(e).message}`,
      );
      return { messages: [], failed: true, minWait: decision.waitMs ?? 0, at: this.clock.now() };
    }
  }

  private async loop(): Promise<void> {
    const { options, clock } = this;
    // Counted here, not around the call: the decrement at a `return` below happens in the same
    // synchronous step as the decision to stop, so nudge() never counts a task that has decided.
    this.live++;
    try {
      let idle = 0;
      for (;;) {
        const seen = this.generation;
        const stop = this.stopReason();
        if (stop) {
          this.stop(stop);
          return;
        }
        const size = this.sizer.take();
        if (size === 0) {
          // The process holds all it can finish in time: wait for a batch to settle, not receive more.
          await this.waitForRoom();
          continue;
        }
        const { messages, failed, minWait, at } = await this.receive(size);
        this.sizer.giveBack(size - messages.length);
        if (messages.length === 0) {
          this.counts.add('emptyReceives');
          if (this.generation !== seen) {
            // A wake-up joined while this receive was in flight: its work may be just behind it.
            idle = 0;
            continue;
          }
          // Drained: the next event for this queue starts or joins a drain.
          if (!failed) return;
          const delay = Math.max(
            minWait,
            backoffDelay(idle, options.minIdleMs, options.maxIdleMs, () => clock.random()),
          );
          if (delay >= options.maxIdleMs || options.signal?.aborted) return; // back-off at its cap: the queue stays unreachable, give up
          idle++;
          const sleep = Math.min(delay, Math.max(0, options.deadline - clock.now()));
          await Promise.race([clock.sleep(sleep), this.nudged.promise, this.aborted.promise]);
          if (this.generation !== seen) idle = 0;
          continue;
        }
        idle = 0;
        const full = messages.length >= size;
        if (full) this.scaleUp();
        await this.batches.handle(messages, at);
        if (!full && this.generation === seen) return;
      }
    } finally {
      this.live--;
    }
  }
}
