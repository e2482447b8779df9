import { type Clock, systemClock } from '../../shared/ports';
import { rng } from '../../tools/testkit/generate';

/** A clock whose `now` can be moved forward, as if the test had waited. */
export function movableClock(): { clock: Clock; advance(ms: number): void } {
  let offset = 0;
  return { clock: { ...systemClock, now: () => Date.now() + offset }, advance: (ms) => (offset += ms) };
}

/** The system's time with seeded randomness: a run's random choices (shuffles, jitter, ids) repeat exactly. */
export function seededClock(seed: number): Clock {
  return { ...systemClock, random: rng(seed) };
}
