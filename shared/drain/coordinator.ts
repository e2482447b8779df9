/**
 * The process's drains: a map from queue to its QueueWorker (see queue-worker.ts for how a
 * wake-up joins a drain, or drains, and why no wake-up is lost), plus what the workers share:
 * the shutdown signal, one ReceiveSizer per stage, the fan-out publisher, and the sum of their
 * activity for GET /api/health.
 *
 * Fan-out (docs/DESIGN.md, "Scale-out"): the drain holding a deep input queue's slot 0 asks
 * for more drains by publishing fan-out events. One that reaches an instance already draining
 * the queue is held by its worker (its Service Bus message locked) until that drain ends, so
 * the platform's target-based scaling counts it while this instance runs one drain per queue;
 * one that reaches another instance drains there with its own slot.
 */
import type { Tuning } from '../config/settings';
import type { Stage } from '../names';
import type { Clock, DrainSlots, Logger, MessageProcessor, QueueStore } from '../ports';
import { type EventLoopDelay, eventLoopDelay } from '../util/event-loop-delay';
import { type DrainOptions, drainOptions } from './drain-options';
import { FanOut } from './fan-out';
import { type DrainResult, QueueWorker, type WorkerState } from './queue-worker';
import { ReceiveSizer } from './receive-sizer';

/** A drain of this process, as the status report shows it. */
export interface RunningDrain {
  queue: string;
  /** Its worker's state: probing, draining (a slot round), looking (the closing look), or stopping. */
  state: WorkerState;
  tasks: number;
  /** The most tasks at once in its current round. */
  peakTasks: number;
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
  /** Times a task waited for room instead of receiving: the process held all it could settle in time. */
  holdWaits: number;
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

export class DrainCoordinator {
  /** Aborted by beginShutdown(): running drains stop taking work and hand the rest over. */
  private readonly stopping = new AbortController();
  private readonly workers = new Map<string, QueueWorker>();
  private readonly stages = new Map<QueueWorker, Stage>();
  private readonly options: DrainOptions;
  private readonly fanOut: FanOut;
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

  /** A wake-up of `queue`: its worker joins, holds or drains (see QueueWorker.wake). */
  async wake(queue: string, stage: Stage, fanOut = false): Promise<DrainResult> {
    return this.worker(queue, stage).wake(fanOut);
  }

  private worker(queue: string, stage: Stage): QueueWorker {
    let w = this.workers.get(queue);
    if (w) return w;
    const { queues, slots, processors, clock, log, counters } = this.deps;
    w = new QueueWorker({
      queue: queues.queue(queue),
      processor: processors[stage],
      slots,
      clock,
      log,
      options: this.options,
      continuation: (delayMs) => this.deps.continuation(queue, delayMs),
      seenEmpty: (lookedAt) => this.deps.seenEmpty?.(queue, lookedAt) ?? Promise.resolve(),
      fanOut: { by: this.fanOut, stage },
      sizer: this.sizers[stage],
      onRunning: () => this.deps.onRunning?.(this.inProgress),
      ...(counters
        ? {
            counters: {
              duplicates: (n: number) => counters.duplicates?.(queue, n),
              leaseLost: () => counters.leaseLost?.(queue),
            },
          }
        : {}),
    });
    this.workers.set(queue, w);
    this.stages.set(w, stage);
    return w;
  }

  /** Drain invocations in progress in this process (tests assert none is left behind). */
  get inProgress(): number {
    let n = 0;
    for (const w of this.workers.values()) n += w.inProgress;
    return n;
  }

  /** Each queue a drain runs on now, with its worker's state. */
  runningDrains(): RunningDrain[] {
    return [...this.workers.entries()]
      .filter(([, w]) => w.inProgress > 0)
      .map(([queue, w]) => ({ queue, state: w.state, tasks: w.liveTasks, peakTasks: w.peakTasks }));
  }

  activity(): DrainActivity {
    const processed: Record<Stage, number> = { map: 0, reduce: 0 };
    const duplicates: Record<Stage, number> = { map: 0, reduce: 0 };
    let leasesLost = 0;
    let extensions = 0;
    let holdWaits = 0;
    let held = 0;
    for (const [w, stage] of this.stages) {
      processed[stage] += w.total('processed');
      duplicates[stage] += w.total('duplicates');
      leasesLost += w.total('leasesLost');
      extensions += w.total('extensions');
      holdWaits += w.total('holdWaits');
      held += w.held;
    }
    return {
      inProgress: this.inProgress,
      held,
      processed,
      fanOutPublished: this.fanOut.published,
      duplicates,
      leasesLost,
      visibilityExtensions: extensions,
      holdWaits,
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
    for (const w of this.workers.values()) w.stop();
  }
}
