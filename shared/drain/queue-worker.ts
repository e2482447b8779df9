/**
 * One worker per queue in this process, in the shape of pg-boss's Worker and graphile-worker's
 * nudge(): every wake-up of the queue (a WorkDetected event) goes to its worker, which either
 * joins the drain it runs, or runs one: a receive loop whose first iteration is the probe (one
 * receive, without a drain slot, through the same TaskGroup step as every later receive). Work
 * that fits in one receive ends there. Only a drain that must go on (the probe came back full,
 * or a later wake-up joined it) takes a slot, runs a task group, gives the slot back, and looks
 * at the queue once more. The join state is the worker's alone, changed only by its methods; each
 * probe and round counts into a DrainCounts the worker makes and reads (drain-counts.ts), and each
 * drain's fan-out share keeps its own state (fan-out.ts). stop() (the host's shutdown) drives the
 * worker's state, which the status report shows:
 *   idle → probing → draining (a slot round) → looking (the closing look) → idle; any → stopping.
 *
 * The lost wake-up, and what keeps it from happening. Every producer enqueues first and publishes
 * WorkDetected second, so a wake-up may be dropped (joined) only if this worker's drain is certain
 * to read the queue after it. join() accepts a wake-up iff `joinWindowOpen`, which is open
 *   A. from the drain's start until its probe's messages are handled (probe()): a wake-up that
 *      joined then makes the drain go on to a slot round instead of ending (probeThenRounds);
 *   B. from each round's slot request until its closing look starts (closingLook()), which reads
 *      the queue after every join of the round. Its tasks may stop first (budget, shutdown, a
 *      lost lease): the look then finds the work and hands it over as a continuation.
 * A drain ends without a closing look in three ways, each covered otherwise:
 *   1. the probe took all it could see and settled it, and nothing joined (probeSettledAll);
 *   2. every slot is busy (slotsBusy): after a round of ours the holders took their slots after
 *      our release and look after theirs (a crashed holder's event is redelivered); in the
 *      first round a look-again is scheduled past the hold limit;
 *   3. Storage unreachable, or MAX_ROUNDS (handOverLater, handOver): a continuation event.
 * A wake-up that finds the window closed drains the queue itself: refusing is always safe.
 * A fan-out event never joins (it is held until the drain ends, or drains with its own slot).
 * nudge() only wakes a task backing off after a failed receive; it decides nothing.
 */
import { ensureError } from '../errors';
import type { Stage } from '../names';
import type { Clock, DrainQueue, DrainSlots, HeldSlot, Logger, MessageProcessor } from '../ports';
import { retryDecision } from '../retry/transient';
import { DrainCounts, type DrainStats } from './drain-counts';
import type { DrainOptions } from './drain-options';
import type { DrainFanOut, FanOut } from './fan-out';
import { ReceiveSizer } from './receive-sizer';
import { TaskGroup } from './task-group';

export type WorkerState = 'idle' | 'probing' | 'draining' | 'looking' | 'stopping';

/** How a wake-up ended. */
export type DrainResult =
  | { kind: 'slots-busy' }
  | {
      kind: 'drained';
      /** Slot rounds run (0: the probe was enough). */
      rounds: number;
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

/** The counters a worker adds to the process's activity (GET /api/health). */
export type Counted = 'processed' | 'duplicates' | 'extensions' | 'leasesLost' | 'holdWaits';
const COUNTED: readonly Counted[] = ['processed', 'duplicates', 'extensions', 'leasesLost', 'holdWaits'];

function countOf(stats: DrainStats, k: Counted): number {
  return k === 'leasesLost' ? (stats.leaseLost ? 1 : 0) : stats[k];
}

export interface QueueWorkerDeps {
  /** Where it receives, deletes, poisons, and looks (depth, hasVisible). */
  queue: DrainQueue;
  processor: MessageProcessor;
  slots: DrainSlots;
  /** now (the budget), sleep and random (the tasks' back-off). */
  clock: Clock;
  log: Logger;
  options: DrainOptions;
  /** Hand work over to a later wake-up (WorkDetected for this queue), now or after a delay. */
  continuation(delayMs: number): Promise<void>;
  /** The closing look found the queue empty at `lookedAt` (see Continuations.seenEmpty). Best effort. */
  seenEmpty?(lookedAt: number): Promise<void>;
  /** The map stage's fan-out (docs/DESIGN.md, "Scale-out"); absent: none. */
  fanOut?: { by: FanOut; stage: Stage };
  /** Sizes every receive. @defaultValue options.sizer, or one of its own */
  sizer?: ReceiveSizer;
  /** Told whenever a drain of this worker starts or ends. */
  onRunning?(): void;
  /** Told of duplicates and lost leases as each probe or round ends (metrics). */
  counters?: { duplicates?(count: number): void; leaseLost?(): void };
}

/** Rounds repeat only while the closing look finds work and time is left; this bounds them anyway. */
const MAX_ROUNDS = 1000;

/** One wake-up's drain while it runs: what the worker's methods read and change. */
interface Run {
  deadline: number;
  probe: DrainCounts;
  rounds: number;
  /** Absent: the worker has no fan-out. */
  fanOut: DrainFanOut | undefined;
  /** Wake-ups that joined it. */
  joins: number;
  ended: Promise<void>;
}

export class QueueWorker {
  private phase: WorkerState = 'idle';
  /** The drain later wake-ups join; an older one still finishing is no longer joinable. */
  private current: Run | undefined;
  private tasks: TaskGroup | undefined;
  /** See the top of this file. */
  private joinWindowOpen = false;
  /** Drains of this worker running now (the current one, and any older one still finishing). */
  private running = 0;
  /** Fan-out events held while a drain runs. */
  private heldEvents = 0;
  /** Counts of probes and rounds in progress, added to the totals while they run. */
  private readonly live = new Set<DrainCounts>();
  private readonly totals: Record<Counted, number> = {
    processed: 0,
    duplicates: 0,
    extensions: 0,
    leasesLost: 0,
    holdWaits: 0,
  };
  /** Until when a look-again scheduled after finding every slot busy is pending. */
  private lookAgainUntil = 0;
  private readonly sizer: ReceiveSizer;

  constructor(private readonly deps: QueueWorkerDeps) {
    this.sizer = deps.sizer ?? deps.options.sizer ?? ReceiveSizer.forDrain(deps.options);
  }

  get state(): WorkerState {
    return this.phase;
  }

  /** Drains of this worker in progress. */
  get inProgress(): number {
    return this.running;
  }

  /** Fan-out events held right now. */
  get held(): number {
    return this.heldEvents;
  }

  /** Tasks inside their receive loop in the current round. */
  get liveTasks(): number {
    return this.tasks?.liveTasks ?? 0;
  }

  /** The most tasks at once in a probe or round running now. */
  get peakTasks(): number {
    let peak = 0;
    for (const c of this.live) peak = Math.max(peak, c.snapshot().peakTasks);
    return peak;
  }

  /** So far, in every probe and round of this worker (leasesLost: rounds whose slot lease was lost). */
  total(k: Counted): number {
    let n = this.totals[k];
    for (const c of this.live) n += countOf(c.snapshot(), k);
    return n;
  }

  /**
   * A wake-up of the queue: joins the drain running here if it is certain to look again (see the
   * top of this file), is held (a fan-out event while a drain runs), or drains the queue itself.
   */
  async wake(fanOut = false): Promise<DrainResult> {
    const current = this.current;
    if (current && fanOut) {
      // Extra capacity for a queue this instance already drains: held, never a second drain here.
      this.tasks?.nudge();
      this.heldEvents++;
      try {
        await current.ended;
      } finally {
        this.heldEvents--;
      }
      return { kind: 'held' };
    }
    if (current && this.join()) {
      // New work joined: if this drain leads, the backlog may have grown past what it asked for.
      await current.fanOut?.joined();
      return { kind: 'joined' };
    }
    if (fanOut && !(await this.deps.queue.hasVisible())) return { kind: 'fan-out-idle' };
    return this.drain(fanOut);
  }

  /** True iff the current drain's join window is open: it takes this wake-up's work (see the top of this file). */
  join(): boolean {
    const run = this.current;
    if (!run || !this.joinWindowOpen) return false;
    this.tasks?.nudge();
    run.joins++;
    return true;
  }

  /** The host is shutting down: running drains stop taking work (their options' signal) and hand the rest over. */
  stop(): void {
    if (this.running > 0) this.phase = 'stopping';
    this.tasks?.nudge();
  }

  private async drain(fanOut: boolean): Promise<Ended> {
    let end = (): void => {};
    const run: Run = {
      deadline: this.deps.clock.now() + this.deps.options.budgetMs,
      probe: new DrainCounts(),
      rounds: 0,
      fanOut: this.deps.fanOut?.by.forDrain(this.deps.queue.name, this.deps.fanOut.stage),
      joins: 0,
      ended: new Promise<void>((r) => (end = r)),
    };
    // Latest drain wins: an older one still running simply stops being joined.
    this.current = run;
    this.tasks = undefined;
    this.joinWindowOpen = true;
    this.running++;
    this.deps.onRunning?.();
    this.live.add(run.probe);
    try {
      const result = await this.probeThenRounds(run, fanOut);
      if (result.kind === 'drained' && result.emptyAt !== undefined) await this.seenEmpty(result.emptyAt);
      return result;
    } finally {
      this.addToTotals(run.probe);
      this.running--;
      if (this.current === run) {
        this.current = undefined;
        this.tasks = undefined;
        this.joinWindowOpen = false;
      }
      if (this.running === 0 && this.phase !== 'stopping') this.phase = 'idle';
      this.deps.onRunning?.();
      end();
    }
  }

  private enter(run: Run, phase: 'probing' | 'draining' | 'looking'): void {
    if (this.current === run && this.phase !== 'stopping') this.phase = phase;
  }

  /** Closes the join window of `run`: from here on a wake-up must drain itself. */
  private closeJoins(run: Run): void {
    if (this.current === run) this.joinWindowOpen = false;
  }

  private openJoins(run: Run): void {
    if (this.current === run) this.joinWindowOpen = true;
  }

  /** A probe or round has ended: its counts move to the totals, and the metrics hear of it. */
  private addToTotals(counts: DrainCounts): void {
    if (!this.live.delete(counts)) return;
    const stats = counts.snapshot();
    for (const k of COUNTED) this.totals[k] += countOf(stats, k);
    if (stats.duplicates > 0) this.deps.counters?.duplicates?.(stats.duplicates);
    if (stats.leaseLost) this.deps.counters?.leaseLost?.();
  }

  private async probeThenRounds(run: Run, fanOut: boolean): Promise<Ended> {
    const { queue, slots } = this.deps;
    // A fan-out event skips the probe: the queue is known to be deep. A wake-up that joined
    // during the probe counts on this drain: go on, with a slot.
    if (!fanOut && !(await this.probe(run)) && run.joins === 0) {
      if (probeSettledAll(run.probe.snapshot())) return this.drained(run);
      const end = await this.closingLook(run, 'queue unreachable', () => this.stopping(run));
      if (end) return end;
    }
    for (let round = 0; round < MAX_ROUNDS; round++) {
      this.openJoins(run);
      let slot;
      try {
        slot = await slots.acquire(queue.name);
      } catch (e) {
        return this.handOverLater(run, e, 'drain slot unavailable');
      }
      if (!slot) return this.slotsBusy(run, round, fanOut);
      let stats: DrainStats;
      try {
        stats = await this.round(run, slot, round);
      } catch (e) {
        await slot.release();
        return this.handOverLater(run, e, 'queue unreachable');
      }
      await slot.release();
      this.deps.log.info(
        `${queue.name}: drain round ${round + 1}: ${stats.processed} processed, ${stats.failed} failed, ${stats.poisoned} poisoned, ${stats.receives} receives by ${stats.tasksStarted} tasks${stats.duplicates ? `, ${stats.duplicates} duplicates (taken by another delivery)` : ''}${stats.extensions ? `, ${stats.extensions} visibility extensions` : ''}${stats.handedBack ? `, ${stats.handedBack} handed back (a newer format)` : ''}${stats.leaseLost ? '; slot lease lost, stopped taking messages' : ''}`,
      );
      // Re-check after releasing the slot: an event may have arrived while we held it.
      const end = await this.closingLook(run, 're-check failed', () => stats.stoppedByBudget || this.stopping(run));
      if (end) return end;
    }
    return this.handOver(run, 0);
  }

  /** The slot-less first receive; true when the drain must go on with a slot (a full or failed receive). */
  private async probe(run: Run): Promise<boolean> {
    if (this.stopping(run)) {
      this.closeJoins(run);
      return false;
    }
    this.enter(run, 'probing');
    try {
      return (await this.taskGroup(run, run.probe).probe()) === 'full';
    } finally {
      this.closeJoins(run);
    }
  }

  /** One round under the slot: the fan-out decision, then a task group until the queue is drained. */
  private async round(run: Run, slot: HeldSlot, round: number): Promise<DrainStats> {
    this.enter(run, 'draining');
    await run.fanOut?.acquired(slot, round);
    const counts = new DrainCounts();
    const tasks = this.taskGroup(run, counts, slot);
    if (this.current === run) this.tasks = tasks;
    this.live.add(counts);
    try {
      // One task; a full receive sizes the group from the depth (see TaskOptions.taskCount).
      await tasks.run(1);
      // Lost after the last task's last look still counts: the slot was somebody else's by the end.
      if (slot.lost) counts.mark('leaseLost');
      run.rounds++;
      return counts.snapshot();
    } finally {
      this.addToTotals(counts);
    }
  }

  /** The probe (without a slot, into the drain's probe counts) and each round use the same task group. */
  private taskGroup(run: Run, counts: DrainCounts, slot?: HeldSlot): TaskGroup {
    const { queue, processor, clock, log, options } = this.deps;
    return new TaskGroup({
      queue,
      processor,
      clock,
      log,
      options: { ...options, deadline: run.deadline, sizer: this.sizer, ...(slot ? { slot } : {}) },
      counts,
    });
  }

  private async slotsBusy(run: Run, round: number, fanOut: boolean): Promise<Ended> {
    this.closeJoins(run);
    // After a round of ours, the holders took their slots after our release: they see the work.
    if (round > 0) return this.drained(run);
    // Every slot is held. A live holder re-checks the queue after releasing it; a crashed one
    // never will, so come back once its lease could have expired. A fan-out event leaves the
    // queue to the holders, unless a plain wake-up joined it.
    if (!fanOut || run.joins > 0) await this.lookAgain(this.deps.slots.holdLimitMs + 1000);
    return { kind: 'slots-busy' };
  }

  /**
   * One pending look-again per queue per process: with many instances, every event that finds
   * the slots busy would otherwise start its own chain of look-agains, each 31 s apart, for as
   * long as the holders run. One covers a crashed holder just as well.
   */
  private async lookAgain(delayMs: number): Promise<void> {
    const now = this.deps.clock.now();
    if (this.lookAgainUntil > now) return;
    this.lookAgainUntil = now + delayMs;
    try {
      await this.deps.continuation(delayMs);
    } catch (e) {
      this.lookAgainUntil = 0;
      throw e;
    }
  }

  /** An empty queue needs no look-again: the next one after finding the slots busy is scheduled anew. */
  private async seenEmpty(lookedAt: number): Promise<void> {
    if (this.lookAgainUntil > lookedAt) this.lookAgainUntil = 0;
    await this.deps.seenEmpty?.(lookedAt);
  }

  /**
   * The closing look; undefined means visible work and time to take it: go on. The approximate
   * count is never below the real one, so 0 settles it in one request; only a non-zero count
   * needs the peek that tells visible work from messages in flight (a failed processor's, or
   * a crashed host's, which come back after the visibility timeout).
   */
  private async closingLook(run: Run, what: string, stop: () => boolean): Promise<Ended | undefined> {
    const { queue, options, clock } = this.deps;
    // From here on a wake-up must drain itself: this look may already be on its way.
    this.closeJoins(run);
    this.enter(run, 'looking');
    let visible: boolean;
    try {
      const lookedAt = clock.now();
      if ((await queue.depth()) === 0) return this.drained(run, undefined, lookedAt);
      visible = await queue.hasVisible();
    } catch (e) {
      return this.handOverLater(run, e, what);
    }
    if (visible) return stop() ? this.handOver(run, 0) : undefined;
    // Nothing visible, but messages in flight come back after the visibility timeout with nobody
    // awake to take them: schedule a wake-up.
    return this.handOver(run, options.visibilityTimeoutSeconds * 1000);
  }

  private stopping(run: Run): boolean {
    return this.deps.clock.now() >= run.deadline || this.deps.options.signal?.aborted === true;
  }

  private drained(run: Run, continuation?: 'now' | 'delayed', emptyAt?: number): Ended {
    return {
      kind: 'drained',
      rounds: run.rounds,
      ...(continuation ? { continuation } : {}),
      ...(emptyAt !== undefined ? { emptyAt } : {}),
    };
  }

  private async handOver(run: Run, delayMs: number): Promise<Ended> {
    try {
      await this.deps.continuation(delayMs);
    } catch (e) {
      this.deps.log.error(
        `${this.deps.queue.name}: continuation event could not be published: ${ensureError(e).message}`,
      );
      throw e;
    }
    return this.drained(run, delayMs > 0 ? 'delayed' : 'now');
  }

  /**
   * Storage unreachable (throttled, 5xx, sockets): don't fail the event into a tight redelivery
   * loop; hand over to a wake-up no sooner than the retry table says. Anything else is thrown.
   */
  private handOverLater(run: Run, e: unknown, what: string): Promise<Ended> {
    const decision = retryDecision(e);
    if (!decision.retry) throw e;
    this.deps.log.warn(`${this.deps.queue.name}: ${what}, handing over with a delay: ${ensureError(e).message}`);
    return this.handOver(run, Math.max(decision.waitMs ?? 0, this.deps.options.visibilityTimeoutSeconds * 1000));
  }
}

/**
 * A short probe that took work and left none of it behind needs no closing look: the queue
 * held nothing more that was visible, and nothing it took will come back. What the look would
 * still find is another process's messages in flight, which that process's drain (or, if it
 * died, its own event, redelivered once its lock expires) takes. An empty probe, or one with a
 * failed message, still looks: that is when messages in flight may have nobody else.
 */
function probeSettledAll(s: DrainStats): boolean {
  return s.receives === 1 && s.emptyReceives === 0 && s.receiveErrors === 0 && s.failed === 0;
}
