/**
 * Every back-off of the app, as pure functions of the attempt and a U(0,1) draw: the caller
 * injects `random` and sleeps on its own clock, so tests check each delay exactly and never
 * wait for one. The three differ on purpose: a drain's idle back-off must grow from a small
 * floor, a syphon retry must never beat the publisher's ping, and a manifest conflict only
 * needs a few milliseconds of spread between racing writers.
 */

/** U(0,1), injected (Clock.random). */
export type Random = () => number;

/**
 * The queue-listener pattern's randomized exponential back-off, after an `attempt`-th idle
 * (or failed) receive: `min + (2^attempt − 1) × U(80, 120)` ms, capped at `maxMs`.
 */
export function backoffDelay(attempt: number, minMs: number, maxMs: number, random: Random): number {
  const factor = 80 + random() * 40;
  const raw = minMs + (Math.pow(2, attempt) - 1) * factor;
  return Math.min(maxMs, Math.round(raw));
}

export interface DoublingBackoff {
  /** The first delay before jitter, ms. */
  firstMs: number;
  /** The most doublings counted: past it the delay stops growing. */
  maxDoublings: number;
  /** The cap before jitter, ms. */
  maxMs: number;
}

/**
 * `min(firstMs × 2^min(attempt, maxDoublings), maxMs) × U(½, 1)`: jittered down only, so a
 * delay never exceeds the cap or comes sooner than half the step.
 */
export function doublingDelay(attempt: number, b: DoublingBackoff, random: Random): number {
  const doublings = Math.min(Math.max(0, Math.floor(attempt)), b.maxDoublings);
  const base = Math.min(b.firstMs * 2 ** doublings, b.maxMs);
  return Math.round(base * (0.5 + random() / 2));
}

/** `U(0, stepMs × (attempt + 1))` ms, whole: writers that lost an ETag race spread out, a little more each time. */
export function conflictDelay(attempt: number, stepMs: number, random: Random): number {
  return Math.floor(random() * stepMs * (attempt + 1));
}
