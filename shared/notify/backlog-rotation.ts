/**
 * The backlog queues of the secondary namespace, in random order per send. A queue that fails
 * leaves the rotation for a cool-down (one ping interval), then is tried again.
 */
import type { FailoverClass } from '../retry/transient';

export interface BacklogQueueHealth {
  queue: string;
  /** Back in the rotation at this time. */
  until: string;
  /** The failure was a misconfiguration (unauthorized, not found, disabled). */
  red: boolean;
  lastError: string;
}

export class BacklogRotation {
  private readonly out = new Map<string, { until: number; red: boolean; lastError: string }>();

  constructor(
    private readonly queues: readonly string[],
    private readonly coolDownMs: number,
  ) {
    if (queues.length === 0) throw new RangeError('BacklogRotation needs at least one queue');
  }

  /** The queues in the rotation now, shuffled (Fisher–Yates with the injected randomness). */
  order(now: number, random: () => number): string[] {
    const live = this.queues.filter((q) => (this.out.get(q)?.until ?? 0) <= now);
    for (let i = live.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [live[i], live[j]] = [live[j]!, live[i]!];
    }
    return live;
  }

  failed(queue: string, kind: FailoverClass, now: number, lastError: string): void {
    this.out.set(queue, { until: now + this.coolDownMs, red: kind === 'permanent', lastError });
  }

  succeeded(queue: string): void {
    this.out.delete(queue);
  }

  /** Queues out of the rotation at `now`. */
  health(now: number): BacklogQueueHealth[] {
    return [...this.out]
      .filter(([, v]) => v.until > now)
      .map(([queue, v]) => ({ queue, until: new Date(v.until).toISOString(), red: v.red, lastError: v.lastError }));
  }
}
