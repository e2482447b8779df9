/**
 * A promise opened from outside, once: what a waiter races against (a nudge, a shutdown, room
 * freed). Whoever opens it replaces it with a new latch when the event can happen again.
 */
export interface Latch {
  readonly promise: Promise<void>;
  open(): void;
}

export function latch(): Latch {
  let open = (): void => {};
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}
