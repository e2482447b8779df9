/**
 * Randomized exponential back-off of the queue-listener pattern:
 *   delay(idle) = min + (2^idle − 1) × U(80, 120) ms, capped at max.
 * `random` is U(0,1) (injected, so tests are exact).
 */
export function backoffDelay(idle: number, minMs: number, maxMs: number, random: () => number): number {
  const factor = 80 + random() * 40;
  const raw = minMs + (Math.pow(2, idle) - 1) * factor;
  return Math.min(maxMs, Math.round(raw));
}
