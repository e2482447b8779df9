/**
 * One timer per store, armed for the earliest expiry, so expired messages leave (or are
 * dead-lettered) even when nobody is receiving.
 */
import type { TimerHandle, Timers } from './timers';

export class ExpirySweep {
  private timer: TimerHandle | undefined;
  private at = Infinity;

  /** `sweep(now)` expires what is due and returns the next expiry (Infinity for none). */
  constructor(
    private readonly timers: Timers,
    private readonly now: () => number,
    private readonly sweep: (now: number) => number,
  ) {}

  /** Makes sure a sweep runs by `at` (epoch ms); Infinity is ignored. */
  schedule(at: number): void {
    if (!Number.isFinite(at) || at >= this.at) return;
    this.timers.cancel(this.timer);
    this.at = at;
    this.timer = this.timers.after(at - this.now() + 1, () => this.run());
  }

  private run(): void {
    this.timer = undefined;
    this.at = Infinity;
    this.schedule(this.sweep(this.now()));
  }
}
