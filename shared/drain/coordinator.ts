/**
 * Every drain of this process goes through here. A wake-up for a queue that a live drain
 * here will still look at joins it (see JoinPoint): its tasks wake and receive again, or its
 * next look at the queue sees the work. So a burst of events costs no extra slots or
 * receives; otherwise the wake-up drains the queue itself.
 *
 * Fan-out (docs/DESIGN.md, "Scale-out"): the drain holding a deep input queue's slot 0 asks
 * for more drains by publishing fan-out events. One that reaches an instance already draining
 * the queue joins and stays held (its Service Bus message locked) until that drain ends, so
 * the platform's target-based scaling counts it while this instance runs one drain per queue;
 * one that reaches another instance drains there with its own slot.
 */
import type { Tuning } from '../config/settings';
import type { Stage } from '../names';
import type { Clock, DrainSlots, Logger, MessageProcessor, QueueStore } from '../ports';
import { type EventLoopDelay, eventLoopDelay } from '../util/event-loop-delay';
import { Drain, type DrainResult } from './drain';
import { type DrainOptions, drainOptions } from './drain-options';
import { FanOut, type FanOutState } from './fan-out';
import { JoinPoint } from './join-point';
import { ReceiveSizer } from './receive-sizer';
import type { TaskGroupState } from './task-group';

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
  /** The processor of each stage: map for the input queues, reduce for the results queue. */
  processors: Record<Stage, MessageProcessor>;
  /** Publishes a continuation event for the queue (now, or after a delay). */
  continuation(queue: string, delayMs: number): Promise<void>;
  /**
   * A drain's closing look found the queue empty at `lookedAt`: continuations scheduled before
   * then cover nothing (see Continuations.seenEmpty). Best effort, never throws.
   */
  seenEmpty?(queue: string, lookedAt: number): Promise<void>;
  /** Publishes `count` fan-out events for the queue. */
  fanOut(queue: string, count: number): Promise<void>;
  clock: Clock;
  log: Logger;
  tuning: Tuning;
  /** Told the number of drains running whenever it changes (the status history records it). */
  onRunning?(count: number): void;
  /** Told of duplicates and lost leases as drains end (metrics). */
  counters?: DrainCounterHook;
}

/** What this process has done, for GET /api/health (no Storage request). */
export interface DrainActivity {
  inProgress: number;
  /** Fan-out events held right now. */
  held: number;
  /** Queue messages processed and deleted by this process, by stage. */
  processed: Record<Stage, number>;
  /** Fan-out events this process published. */
  fanOutPublished: number;
  /**
   * Messages this process processed while another delivery had them too (a delete or a
   * visibility extension found the message taken): work done twice.
   */
  duplicates: Record<Stage, number>;
  /** Drain rounds of this process whose slot lease was lost to another drain (they stopped taking messages). */
  leasesLost: number;
  /** Visibility extensions made for messages still in work (one storage transaction each). */
  visibilityExtensions: number;
  /** How late this process's timers (lease renewals, extensions) ran, since the coordinator started. */
  eventLoopDelay: EventLoopDelay;
  /**
   * Per stage, the messages this process holds now (received or being received, not settled)
   * and the most it lets itself hold: what it can settle within a quarter of the visibility timeout.
   */
  holding: Record<Stage, { held: number; limit: number }>;
}

/**
 * Told of every duplicate and lost lease as it happens: plain counters an observability layer
 * can wire to metrics (pushdrain.drain.duplicates, pushdrain.drain.leases_lost).
 */
export interface DrainCounterHook {
  duplicates?(queue: string, count: number): void;
  leaseLost?(queue: string): void;
}

/** A drain invocation while it runs: where wake-ups join it, and its fan-out state. */
interface LiveDrain {
  stage: Stage;
  join: JoinPoint;
  ended: Promise<void>;
  fanOut: FanOutState;
}

export class DrainCoordinator {
  /** Aborted by beginShutdown(): running drains stop taking work and hand the rest over. */
  private readonly stopping = new AbortController();
  private readonly live = new Map<string, LiveDrain>();
  private readonly running = new Set<LiveDrain>();
  private readonly options: DrainOptions;
  private readonly fanOut: FanOut;
  private held = 0;
  /** Per queue: until when a look-again this process scheduled after finding the slots busy is pending. */
  private readonly lookAgainUntil = new Map<string, number>();
  private readonly processed: Record<Stage, number> = { map: 0, reduce: 0 };
  private readonly duplicates: Record<Stage, number> = { map: 0, reduce: 0 };
  private readonly totals: Record<'extensions' | 'leasesLost', number> = { extensions: 0, leasesLost: 0 };
  /** One per stage: every drain of the stage counts what the process holds, and sizes its receives from the same rate. */
  private readonly sizers: Record<Stage, ReceiveSizer>;

  constructor(private readonly deps: CoordinatorDeps) {
    this.options = drainOptions(deps.tuning, this.stopping.signal);
    eventLoopDelay(); // starts the histogram
    this.sizers = { map: ReceiveSizer.forDrain(this.options), reduce: ReceiveSizer.forDrain(this.options) };
    this.fanOut = new FanOut({
      publish: (q, n) => deps.fanOut(q, n),
      depth: (q) => deps.queues.depth(q),
      clock: deps.clock,
      log: deps.log,
      tuning: deps.tuning,
    });
  }

  async drain(queue: string, stage: Stage, fanOut = false): Promise<DrainResult> {
    const current = this.live.get(queue);
    if (current && fanOut) {
      // Extra capacity for a queue this instance already drains: held, never a second drain here.
      current.join.tasks?.nudge();
      this.held++;
      try {
        await current.ended;
      } finally {
        this.held--;
      }
      return { kind: 'held' };
    }
    if (current?.join.join()) {
      // New work joined: if this drain leads, the backlog may have grown past what it asked for.
      await this.fanOut.joined(queue, current.fanOut);
      return { kind: 'joined' };
    }
    const { queues, slots, processors, clock, log } = this.deps;
    if (fanOut && !(await queues.queue(queue).hasVisible())) return { kind: 'fan-out-idle' };
    let end = (): void => {};
    const entry: LiveDrain = {
      stage,
      join: new JoinPoint(),
      ended: new Promise<void>((r) => (end = r)),
      fanOut: FanOut.state(),
    };
    this.running.add(entry);
    this.deps.onRunning?.(this.running.size);
    // Latest drain wins the entry; an older one still running simply stops being joined.
    this.live.set(queue, entry);
    try {
      const result = await new Drain({
        queue: queues.queue(queue),
        processor: processors[stage],
        slots,
        clock,
        log,
        options: this.options,
        join: entry.join,
        continuation: (delayMs, reason) =>
          reason === 'busy' ? this.lookAgain(queue, delayMs) : this.deps.continuation(queue, delayMs),
        acquired: (slot, round) => this.fanOut.acquired(queue, stage, entry.fanOut, slot, round),
        // A fan-out event leaves busy slots to their holders, unless a plain wake-up joined it.
        get onSlotsBusy() {
          return fanOut && entry.join.joins === 0 ? ('leave' as const) : ('hand-over' as const);
        },
        probe: !fanOut,
        sizer: this.sizers[stage],
      }).run();
      if (result.kind === 'drained' && result.emptyAt !== undefined) await this.seenEmpty(queue, result.emptyAt);
      return result;
    } finally {
      entry.join.lookAhead = false;
      this.processed[stage] += entry.join.processed;
      const duplicates = entry.join.total('duplicates');
      const lost = entry.join.total('leasesLost');
      this.duplicates[stage] += duplicates;
      this.totals.extensions += entry.join.total('extensions');
      this.totals.leasesLost += lost;
      if (duplicates > 0) this.deps.counters?.duplicates?.(queue, duplicates);
      for (let i = 0; i < lost; i++) this.deps.counters?.leaseLost?.(queue);
      this.running.delete(entry);
      this.deps.onRunning?.(this.running.size);
      if (this.live.get(queue) === entry) this.live.delete(queue);
      end();
    }
  }

  /**
   * One pending look-again per queue per process: with many instances, every event that finds
   * the slots busy would otherwise start its own chain of look-agains, each 31 s apart, for as
   * long as the holders run. One covers a crashed holder just as well.
   */
  private async lookAgain(queue: string, delayMs: number): Promise<void> {
    const now = this.deps.clock.now();
    if ((this.lookAgainUntil.get(queue) ?? 0) > now) return;
    this.lookAgainUntil.set(queue, now + delayMs);
    try {
      await this.deps.continuation(queue, delayMs);
    } catch (e) {
      this.lookAgainUntil.delete(queue);
      throw e;
    }
  }

  /** An empty queue needs no look-again: the next one after finding the slots busy is scheduled anew. */
  private async seenEmpty(queue: string, lookedAt: number): Promise<void> {
    if ((this.lookAgainUntil.get(queue) ?? 0) > lookedAt) this.lookAgainUntil.delete(queue);
    await this.deps.seenEmpty?.(queue, lookedAt);
  }

  /** Drain invocations in progress in this process (tests assert none is left behind). */
  get inProgress(): number {
    return this.running.size;
  }

  /** The drain each queue is joined to now (an older one of the same queue still finishing is counted in inProgress only). */
  runningDrains(): RunningDrain[] {
    return [...this.live.entries()].map(([queue, d]) => ({
      queue,
      state: d.join.tasks?.state ?? 'starting',
      tasks: d.join.tasks?.liveTasks ?? 0,
    }));
  }

  activity(): DrainActivity {
    const processed = { ...this.processed };
    const duplicates = { ...this.duplicates };
    const totals = { ...this.totals };
    for (const d of this.running) {
      processed[d.stage] += d.join.processed;
      duplicates[d.stage] += d.join.total('duplicates');
      totals.extensions += d.join.total('extensions');
      totals.leasesLost += d.join.total('leasesLost');
    }
    return {
      inProgress: this.running.size,
      held: this.held,
      processed,
      fanOutPublished: this.fanOut.published,
      duplicates,
      leasesLost: totals.leasesLost,
      visibilityExtensions: totals.extensions,
      eventLoopDelay: eventLoopDelay(),
      holding: {
        map: { held: this.sizers.map.held, limit: this.sizers.map.holdLimit },
        reduce: { held: this.sizers.reduce.held, limit: this.sizers.reduce.holdLimit },
      },
    };
  }

  /** Graceful stop: drains finish their current batch, then hand the rest over. */
  beginShutdown(): void {
    this.stopping.abort();
  }
}
