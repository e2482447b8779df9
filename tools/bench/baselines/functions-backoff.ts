/**
 * The Azure Functions / WebJobs queue listener's delay rule (RandomizedExponentialBackoffStrategy
 * in azure-webjobs-sdk), ported as is: after a poll that found messages the delay resets to the
 * minimum; after each empty poll it grows to min + U(0.8, 1.2) × 2^(e−1) × min, until it would
 * pass the maximum, where it stays. The queue trigger uses min 100 ms and max = maxPollingInterval
 * (60 s by default).
 */

export const FUNCTIONS_MIN_POLL_MS = 100;
export const FUNCTIONS_MAX_POLL_MS = 60_000;
const RANDOMIZATION = 0.2;

export interface BackoffState {
  exponent: number;
  currentMs: number;
}

export class RandomizedExponentialBackoff {
  private state: BackoffState = { exponent: 0, currentMs: 0 };

  constructor(
    private readonly minMs: number,
    private readonly maxMs: number,
    private readonly random: () => number,
    /** The SDK passes the minimum interval as the delta. */
    private readonly deltaMs: number = minMs,
  ) {}

  /** `executionSucceeded`: did any poll since the previous delay find a message? */
  next(executionSucceeded: boolean): number {
    const s = this.state;
    if (executionSucceeded) {
      s.currentMs = this.minMs;
      s.exponent = 1;
    } else if (s.currentMs !== this.maxMs) {
      let interval = this.minMs;
      if (s.exponent > 0) {
        const factor = 1 - RANDOMIZATION + this.random() * 2 * RANDOMIZATION;
        interval += factor * Math.pow(2, s.exponent - 1) * this.deltaMs;
      }
      if (interval < this.maxMs) {
        s.currentMs = interval;
        s.exponent++;
      } else {
        s.currentMs = this.maxMs;
      }
    }
    return s.currentMs;
  }

  snapshot(): BackoffState {
    return { ...this.state };
  }

  restore(state: BackoffState): void {
    this.state = { ...state };
  }
}

/**
 * Where a listener stands `idleMs` after its last message: replays the rule from the delay
 * that follows a successful poll, one empty poll per delay, and returns the state at that
 * moment and how long until its next poll. This is what lets the bench start a listener
 * "after a long idle" without waiting it out: at the 60 s cap the state no longer changes,
 * so only the phase (time to the next poll) matters, and that is what this returns.
 */
export function idleState(
  idleMs: number,
  minMs: number,
  maxMs: number,
  random: () => number,
): { state: BackoffState; untilNextPollMs: number; polls: number } {
  const b = new RandomizedExponentialBackoff(minMs, maxMs, random);
  let t = b.next(true); // the first empty poll after work waits the minimum
  let polls = 0;
  // Bounded: each step advances t by at least minMs (> 0), or jumps by whole cap periods.
  for (let step = 0; t <= idleMs && step < 100_000; step++) {
    const d = b.next(false);
    polls++;
    if (d === maxMs && t + d <= idleMs) {
      const periods = Math.floor((idleMs - t) / maxMs);
      t += periods * maxMs;
      polls += periods - 1;
      continue;
    }
    t += d;
  }
  return { state: b.snapshot(), untilNextPollMs: t - idleMs, polls };
}
