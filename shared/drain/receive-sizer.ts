/**
 * How many messages a task receives next: what this process can finish well within the
 * visibility timeout, counted over everything the stage holds in the process, not per receive.
 *
 * It counts every message the stage holds here (asked for by a receive in flight, or received
 * and not yet settled), across all tasks and all drains, and times every batch from receive to
 * delete. By Little's law, a process that holds `h` messages which take `T` each settles one
 * every `T / h`: that is the time per message it learns (so a wait for a busy CPU, or for a
 * storage account that answers slowly, counts too). What fits in a quarter of the visibility
 * timeout at that rate is the process's hold limit; a receive asks for what is left under it, up
 * to the cap of one receive, and a task finding nothing left waits until a batch settles.
 *
 * Holding more than that would not finish the work sooner: the CPU, or the store behind
 * the requests, is the limit. It only makes each message wait longer, until its visibility
 * timeout passes, or an extension waits behind the other requests and arrives too late. Like
 * the Functions queue trigger, which fetches the next batch only when half of the current one
 * is done, it takes only what can be finished; unlike it, the amount follows the measured rate,
 * so a bigger chunk, a starved CPU or a slow store all shrink it, and a fast path grows it back.
 *
 * One sizer per stage per process: every task of every drain of the stage shares the count
 * and the estimate, so a new drain starts from what the last one learned.
 */

import { latch } from '../util/latch';

/** Everything held should be settled within this share of the visibility timeout (extensions start at 40 %). */
const HOLD_SHARE = 0.25;
/** Weight of the newest batch in the per-message estimate. */
const WEIGHT = 0.3;

export class ReceiveSizer {
  private perMessageMs: number | undefined;
  private holding = 0;
  private freed = latch();

  /**
   * @param max - the cap of one receive
   * @param visibilityTimeoutSeconds - what everything held must be settled within (a quarter of it)
   * @param initialLimit - what the process may hold before a batch has been timed. @defaultValue max
   */
  constructor(
    private readonly max: number,
    private readonly visibilityTimeoutSeconds: number,
    private readonly initialLimit = max,
  ) {}

  /**
   * The sizer of a drain's options: receives of at most `batchSize`, and before a batch has been
   * timed, what one drain's tasks receive at once (`batchSize × maxTasks`), so a backlog's first
   * wave of fan-out events cannot take more than a few batches before anything is measured.
   */
  static forDrain(options: { batchSize: number; visibilityTimeoutSeconds: number; maxTasks: number }): ReceiveSizer {
    const { batchSize, visibilityTimeoutSeconds, maxTasks } = options;
    return new ReceiveSizer(batchSize, visibilityTimeoutSeconds, batchSize * maxTasks);
  }

  /** Messages the process may hold at once: the initial limit until a batch has been timed; at least 1. */
  get holdLimit(): number {
    if (this.perMessageMs === undefined || this.perMessageMs <= 0) return Math.max(1, this.initialLimit);
    return Math.max(1, Math.floor((this.visibilityTimeoutSeconds * 1000 * HOLD_SHARE) / this.perMessageMs));
  }

  /** Messages held now (received or asked for, not yet settled). */
  get held(): number {
    return this.holding;
  }

  /**
   * Reserves the next receive's size, 1…max, and counts it as held; 0 when the hold limit is
   * reached (wait for `freedSoon()`, then ask again). A process holding nothing may always take one.
   */
  take(): number {
    const n = Math.min(this.max, this.holdLimit - this.holding);
    if (n >= 1) {
      this.holding += n;
      return n;
    }
    if (this.holding > 0) return 0;
    this.holding = 1;
    return 1;
  }

  /** Gives back `n` held messages: the part of a reservation a receive did not fill, or a settled batch. */
  giveBack(n: number): void {
    if (n <= 0) return;
    this.holding = Math.max(0, this.holding - n);
    const fire = this.freed;
    this.freed = latch();
    fire.open();
  }

  /** Settles on the next giveBack: a task that found the hold limit reached waits on it. */
  freedSoon(): Promise<void> {
    return this.freed.promise;
  }

  /**
   * A batch of `count` messages was held for `elapsedMs` (received to deleted) while the process
   * held `heldWith` messages of the stage in all: the process settled one every elapsedMs / heldWith.
   */
  observe(count: number, elapsedMs: number, heldWith = count): void {
    if (count <= 0 || !(elapsedMs >= 0)) return;
    const sample = elapsedMs / Math.max(count, heldWith);
    this.perMessageMs = this.perMessageMs === undefined ? sample : WEIGHT * sample + (1 - WEIGHT) * this.perMessageMs;
  }

  /** The current estimate, ms per message settled by the process (status and tests). */
  get estimateMs(): number | undefined {
    return this.perMessageMs;
  }
}
