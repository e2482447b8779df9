/**
 * One wake-up of one queue. First a probe: one receive, without a drain slot, and the
 * processing of what it returned. Work that fits in one receive (a small batch trickling in)
 * ends there, after one look at the queue. Only a drain that must go on (the probe came back
 * full, or a later wake-up joined it) takes a slot, runs a task group, gives the slot back,
 * and then looks at the queue once more. That closing look closes the lost-wake-up race:
 * work may have been enqueued (and its event consumed by a wake-up that found no free slot)
 * while our last task was exiting.
 *
 * A Drain runs once, through an explicit state map, as pg-boss's Worker does:
 *   created → running (probe and rounds) → stopping (slot released, handing over) → stopped.
 */
import { ensureError } from '../errors';
import type { Clock, DrainQueue, DrainSlots, HeldSlot, Logger, MessageProcessor, QueueMessage } from '../ports';
import { retryDecision } from '../retry/transient';
import { BatchHandler } from './batch-handler';
import type { DrainOptions } from './drain-options';
import { type DrainStats, emptyStats } from './drain-stats';
import { JoinPoint } from './join-point';
import { ReceiveSizer } from './receive-sizer';
import { TaskGroup } from './task-group';

export type DrainState = 'created' | 'running' | 'stopping' | 'stopped';

/** How a wake-up ended; the coordinator adds the kinds of a wake-up that did not drain. */
export type DrainResult =
  | { kind: 'slots-busy'; probe: DrainStats }
  | {
      kind: 'drained';
      probe: DrainStats;
      rounds: number;
      stats: DrainStats[];
      continuation?: 'now' | 'delayed';
      /** The closing look found the queue empty; the time just before it read the depth. */
      emptyAt?: number;
    }
  /** Joined a drain of the queue already running in this process. */
  | { kind: 'joined' }
  /** A fan-out event held while this process drained its queue. */
  | { kind: 'held' }
  /** A fan-out event that found nothing visible: it is dropped after one peek. */
  | { kind: 'fan-out-idle' };

type Ended = Extract<DrainResult, { kind: 'slots-busy' | 'drained' }>;

export interface DrainDeps {
  /** Where it receives, deletes, poisons, and looks (depth, hasVisible). */
  queue: DrainQueue;
  processor: MessageProcessor;
  slots: DrainSlots;
  /** now (the budget), sleep and random (the tasks' back-off). */
  clock: Clock;
  log: Logger;
  options: DrainOptions;
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
  /** Where later wake-ups of this process join it. @defaultValue a JoinPoint of its own */
  join?: JoinPoint;
  /** Sizes every receive of the drain from the recent time per message. @defaultValue options.sizer, or one of its own */
  sizer?: ReceiveSizer;
}

/** Rounds repeat only while the closing look finds work and time is left; this bounds them anyway. */
const MAX_ROUNDS = 1000;

export class Drain {
  private phase: DrainState = 'created';
  private readonly join: JoinPoint;
  private readonly probeStats = emptyStats();
  private readonly rounds: DrainStats[] = [];
  private deadline = 0;
  private readonly sizer: ReceiveSizer;

  constructor(private readonly deps: DrainDeps) {
    this.join = deps.join ?? new JoinPoint();
    this.sizer = deps.sizer ?? deps.options.sizer ?? ReceiveSizer.forDrain(deps.options);
    this.join.probe = this.probeStats;
  }

  get state(): DrainState {
    return this.phase;
  }

  async run(): Promise<Ended> {
    if (this.phase !== 'created') throw new Error(`drain already ${this.phase}`);
    this.phase = 'running';
    try {
      return await this.probeThenRounds();
    } finally {
      this.phase = 'stopped';
    }
  }

  private async probeThenRounds(): Promise<Ended> {
    const { queue, slots, options, clock } = this.deps;
    this.deadline = clock.now() + options.budgetMs;
    // A wake-up that joined during the probe counts on this drain: go on, with a slot.
    if (!(await this.probe()) && this.join.joins === 0) {
      if (this.probeSettledAll()) return this.drained();
      const end = await this.closingLook('queue unreachable', () => this.stopping());
      if (end) return end;
    }
    for (let round = 0; round < MAX_ROUNDS; round++) {
      this.join.lookAhead = true;
      let slot;
      try {
        slot = await slots.acquire(queue.name);
      } catch (e) {
        return this.handOverLater(e, 'drain slot unavailable');
      }
      if (!slot) return this.slotsBusy(round);
      let stats: DrainStats;
      try {
        stats = await this.round(slot, round);
      } catch (e) {
        await slot.release();
        return this.handOverLater(e, 'queue unreachable');
      }
      await slot.release();
      this.deps.log.info(
        `${queue.name}: drain round ${round + 1}: ${stats.processed} processed, ${stats.failed} failed, ${stats.poisoned} poisoned, ${stats.receives} receives by ${stats.tasksStarted} tasks${stats.duplicates ? `, ${stats.duplicates} duplicates (taken by another delivery)` : ''}${stats.extensions ? `, ${stats.extensions} visibility extensions` : ''}${stats.leaseLost ? '; slot lease lost, stopped taking messages' : ''}`,
      );
      // Re-check after releasing the slot: an event may have arrived while we held it.
      const end = await this.closingLook('re-check failed', () => stats.stoppedByBudget || this.stopping());
      if (end) return end;
    }
    return this.handOver(0);
  }

  /** The slot-less receive; true when the drain must go on with a slot (a full or failed receive). */
  private async probe(): Promise<boolean> {
    const { queue, processor, log, options, clock } = this.deps;
    if (this.deps.probe === false) return true;
    if (this.stopping()) {
      this.join.lookAhead = false;
      return false;
    }
    const stats = this.probeStats;
    // The process holds all it can finish in time: go on with a slot, whose tasks wait for room.
    const size = this.sizer.take();
    if (size === 0) {
      this.join.lookAhead = false;
      return true;
    }
    let got: QueueMessage[] = [];
    try {
      const at = clock.now();
      try {
        got = await queue.receive(size, options.visibilityTimeoutSeconds);
      } finally {
        this.sizer.giveBack(size - got.length);
      }
      stats.receives++;
      if (got.length === 0) stats.emptyReceives++;
      else
        await new BatchHandler({
          queue,
          processor,
          log,
          maxDequeueCount: options.maxDequeueCount,
          counts: stats,
          visibilityTimeoutSeconds: options.visibilityTimeoutSeconds,
          sizer: this.sizer,
          clock,
        }).handle(got, at);
      return got.length >= size;
    } catch (e) {
      // Let the task group retry it, with its back-off.
      stats.receiveErrors++;
      log.warn(`${queue.name}: probe receive failed: ${ensureError(e).message}`);
      return true;
    } finally {
      this.join.lookAhead = false;
    }
  }

  /**
   * A short probe that took work and left none of it behind needs no closing look: the queue
   * held nothing more that was visible, and nothing it took will come back. What the look would
   * still find is another process's messages in flight, which that process's drain (or, if it
   * died, its own event, redelivered once its lock expires) takes. An empty probe, or one with a
   * failed message, still looks: that is when messages in flight may have nobody else.
   */
  private probeSettledAll(): boolean {
    const s = this.probeStats;
    return s.receives === 1 && s.emptyReceives === 0 && s.receiveErrors === 0 && s.failed === 0;
  }

  /** One round under the slot: the fan-out decision, then a task group until the queue is drained. */
  private async round(slot: HeldSlot, round: number): Promise<DrainStats> {
    const { queue, processor, clock, log, options } = this.deps;
    if (this.deps.acquired) await this.deps.acquired(slot, round);
    const tasks = new TaskGroup({
      queue,
      processor,
      clock,
      log,
      options: { ...options, deadline: this.deadline, sizer: this.sizer, slot },
    });
    this.join.begin(tasks);
    // One task; a full receive sizes the group from the depth (see TaskOptions.taskCount).
    const stats = await tasks.run(1);
    // Lost after the last task's last look still counts: the slot was somebody else's by the end.
    if (slot.lost) stats.leaseLost = true;
    this.rounds.push(stats);
    return stats;
  }

  private async slotsBusy(round: number): Promise<Ended> {
    this.join.lookAhead = false;
    this.phase = 'stopping';
    // After a round of ours, the holders took their slots after our release: they see the work.
    if (round > 0) return this.drained();
    // Every slot is held. A live holder re-checks the queue after releasing it; a crashed one
    // never will, so come back once its lease could have expired.
    if (this.deps.onSlotsBusy !== 'leave') await this.deps.continuation(this.deps.slots.holdLimitMs + 1000, 'busy');
    return { kind: 'slots-busy', probe: this.probeStats };
  }

  /**
   * The closing look; undefined means visible work and time to take it: go on. The approximate
   * count is never below the real one, so 0 settles it in one request; only a non-zero count
   * needs the peek that tells visible work from messages in flight (a failed processor's, or
   * a crashed host's, which come back after the visibility timeout).
   */
  private async closingLook(what: string, stop: () => boolean): Promise<Ended | undefined> {
    const { queue, options, clock } = this.deps;
    // From here on a wake-up must drain itself: this look may already be on its way.
    this.join.lookAhead = false;
    let visible: boolean;
    try {
      const lookedAt = clock.now();
      if ((await queue.depth()) === 0) return this.drained(undefined, lookedAt);
      visible = await queue.hasVisible();
    } catch (e) {
      return this.handOverLater(e, what);
    }
    if (visible) return stop() ? this.handOver(0) : undefined;
    // Nothing visible, but messages in flight come back after the visibility timeout with nobody
    // awake to take them: schedule a wake-up.
    return this.handOver(options.visibilityTimeoutSeconds * 1000);
  }

  private stopping(): boolean {
    return this.deps.clock.now() >= this.deadline || this.deps.options.signal?.aborted === true;
  }

  private drained(continuation?: 'now' | 'delayed', emptyAt?: number): Ended {
    this.phase = 'stopping';
    return {
      kind: 'drained',
      probe: this.probeStats,
      rounds: this.rounds.length,
      stats: this.rounds,
      ...(continuation ? { continuation } : {}),
      ...(emptyAt !== undefined ? { emptyAt } : {}),
    };
  }

  private async handOver(delayMs: number): Promise<Ended> {
    this.phase = 'stopping';
    try {
      await this.deps.continuation(delayMs);
    } catch (e) {
      this.deps.log.error(
        `${this.deps.queue.name}: continuation event could not be published: ${ensureError(e).message}`,
      );
      throw e;
    }
    return this.drained(delayMs > 0 ? 'delayed' : 'now');
  }

  /**
   * Storage unreachable (throttled, 5xx, sockets): don't fail the event into a tight redelivery
   * loop; hand over to a wake-up no sooner than the retry table says. Anything else is thrown.
   */
  private handOverLater(e: unknown, what: string): Promise<Ended> {
    const decision = retryDecision(e);
    if (!decision.retry) throw e;
    this.deps.log.warn(`${this.deps.queue.name}: ${what}, handing over with a delay: ${ensureError(e).message}`);
    return this.handOver(Math.max(decision.waitMs ?? 0, this.deps.options.visibilityTimeoutSeconds * 1000));
  }
}
