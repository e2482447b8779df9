import { type Clock, systemClock } from '../../shared/ports';

/** A clock whose `now` can be moved forward, as if the test had waited. */
export function movableClock(): { clock: Clock; advance(ms: number): void } {
  let offset = 0;
  return { clock: { ...systemClock, now: () => Date.now() + offset }, advance: (ms) => (offset += ms) };
}
