/**
 * How many messages a task receives next: as many as it can finish well within the visibility
 * timeout, judged from the time its recent batches took per message (receive to delete, so the
 * wait for a busy CPU counts too). Like the Functions queue trigger, which fetches the next batch
 * only when half of the current one is done, it takes only what can be finished; unlike it, the
 * size follows the measured time, so a bigger chunk (slower to map), a starved CPU, or more
 * drains sharing a process all shrink the batch, and a fast path grows it back to the cap.
 *
 * One sizer per stage per process: every task of every drain of the stage shares the estimate,
 * so a new drain starts from what the last one learned.
 */

/** A task's batch should be done within this share of the visibility timeout (extensions start at 40 %). */
export const HOLD_SHARE = 0.25;
/** Weight of the newest batch in the per-message estimate. */
const WEIGHT = 0.3;

export class ReceiveSizer {
  private perMessageMs: number | undefined;

  constructor(
    private readonly max: number,
    private readonly visibilityTimeoutSeconds: number,
  ) {}

  /** The next receive's size: 1…max; max until a batch has been timed. */
  next(): number {
    if (this.perMessageMs === undefined || this.perMessageMs <= 0) return this.max;
    const fits = Math.floor((this.visibilityTimeoutSeconds * 1000 * HOLD_SHARE) / this.perMessageMs);
    return Math.max(1, Math.min(this.max, fits));
  }

  /** A batch of `count` messages was held for `elapsedMs` (received to deleted). */
  observe(count: number, elapsedMs: number): void {
    if (count <= 0 || !(elapsedMs >= 0)) return;
    const sample = elapsedMs / count;
    this.perMessageMs = this.perMessageMs === undefined ? sample : WEIGHT * sample + (1 - WEIGHT) * this.perMessageMs;
  }

  /** The current estimate, ms per message (status and tests). */
  get estimateMs(): number | undefined {
    return this.perMessageMs;
  }
}
