/**
 * Every timer the broker starts goes through here, so `stop()` can clear them all at once.
 * Timers are unref'd (a forgotten broker never keeps a process alive by itself), and delays
 * beyond Node's 24.8-day limit are chained instead of firing at once.
 */
const MAX_DELAY_MS = 2 ** 31 - 1;

export interface TimerHandle {
  timeout: NodeJS.Timeout | undefined;
}

export class Timers {
  private readonly handles = new Set<TimerHandle>();
  private stopped = false;

  /** Runs `fn` after `ms`; returns undefined (and does nothing) once the broker has stopped. */
  after(ms: number, fn: () => void): TimerHandle | undefined {
    if (this.stopped) return undefined;
    const handle: TimerHandle = { timeout: undefined };
    const arm = (remaining: number): void => {
      const step = Math.min(Math.max(0, remaining), MAX_DELAY_MS);
      handle.timeout = setTimeout(() => {
        if (remaining > step) return arm(remaining - step);
        this.handles.delete(handle);
        fn();
      }, step);
      handle.timeout.unref();
    };
    arm(ms);
    this.handles.add(handle);
    return handle;
  }

  cancel(handle: TimerHandle | undefined): void {
    if (handle === undefined) return;
    clearTimeout(handle.timeout);
    this.handles.delete(handle);
  }

  /** Timers still pending (tests check it is zero after stop). */
  get active(): number {
    return this.handles.size;
  }

  stop(): void {
    this.stopped = true;
    for (const h of this.handles) clearTimeout(h.timeout);
    this.handles.clear();
  }
}
