/**
 * The continuations this process scheduled, per queue, until they come due (docs/DESIGN.md,
 * "Scheduled continuations after a scale-in"). A drain schedules one when it leaves messages in
 * flight with nobody awake to take them (a crashed holder's come back after the visibility
 * timeout), when every slot was held, or when Storage failed: each is a WorkDetected event that
 * drives the scale controller when it comes due, so each is a cold start if nobody runs then.
 *
 * Two rules keep them from waking a fleet that has nothing to do, and keep the protection:
 *  - Coalesced: a continuation of the queue that is already scheduled and comes due no later
 *    covers a new one (the drain it wakes looks again and schedules the next if still needed).
 *  - Cancelled when the queue is seen empty: a depth of 0 (the approximate count, never below
 *    the real one, includes messages in flight) read after a continuation was scheduled means
 *    what it covered is gone. A drain's closing look reads it; so does the shutdown of an
 *    instance that still has continuations pending (scale-in), before it goes. A queue that is
 *    not empty then keeps its continuation: that is the one a lost wake-up needs.
 * A continuation that could not be cancelled (already due, or sent to the secondary's backlog)
 * fires as before; a crashed process cancels nothing. Neither loses work, both cost one start.
 */
import type { ScheduledMessages } from '../bus/bus-publisher';
import { ensureError } from '../errors';
import type { Clock, Logger } from '../ports';

export interface ContinuationsDeps {
  /** Publishes the continuation event (now, or scheduled `delayMs` ahead). */
  publish(queue: string, delayMs: number): Promise<ScheduledMessages | void>;
  /** The queue's approximate message count (messages in flight included). */
  depth(queue: string): Promise<number>;
  clock: Pick<Clock, 'now'>;
  log: Logger;
}

/** What this process did with its scheduled continuations, for GET /api/health. */
export interface ContinuationCounts {
  /** Scheduled on the topic by this process. */
  scheduled: number;
  /** Not scheduled: an earlier one of the same queue, still pending, covered it. */
  coalesced: number;
  /** Taken back before they came due: their queue was seen empty. */
  cancelled: number;
  /** Scheduled and neither due nor cancelled yet. */
  pending: number;
}

interface Pending {
  scheduledAt: number;
  dueAt: number;
  /** Undefined when the publisher could not hand back a way to cancel it. */
  scheduled: ScheduledMessages | undefined;
}

export class Continuations {
  private readonly pending = new Map<string, Pending[]>();
  private readonly counts = { scheduled: 0, coalesced: 0, cancelled: 0 };

  constructor(private readonly deps: ContinuationsDeps) {}

  /** Hands the queue over to a wake-up `delayMs` from now (0: now; never coalesced or cancelled). */
  async schedule(queue: string, delayMs: number): Promise<void> {
    if (delayMs <= 0) {
      await this.deps.publish(queue, 0);
      return;
    }
    const now = this.deps.clock.now();
    const dueAt = now + delayMs;
    const live = this.live(queue, now);
    if (live.some((p) => p.dueAt <= dueAt)) {
      this.counts.coalesced++;
      return;
    }
    // Recorded before the send, so that a concurrent drain of the queue coalesces into it.
    const entry: Pending = { scheduledAt: now, dueAt, scheduled: undefined };
    this.pending.set(queue, [...live, entry]);
    try {
      entry.scheduled = (await this.deps.publish(queue, delayMs)) ?? undefined;
    } catch (e) {
      this.forget(queue, entry);
      throw e;
    }
    this.counts.scheduled++;
  }

  private forget(queue: string, entry: Pending): void {
    const rest = (this.pending.get(queue) ?? []).filter((p) => p !== entry);
    if (rest.length > 0) this.pending.set(queue, rest);
    else this.pending.delete(queue);
  }

  /**
   * The queue was empty at `lookedAt` (the time before its depth was read): every continuation
   * scheduled before then covers nothing any more. Cancelling is best effort: one that came due
   * meanwhile just fires.
   */
  async seenEmpty(queue: string, lookedAt: number): Promise<void> {
    const live = this.live(queue, this.deps.clock.now());
    const stale = live.filter((p) => p.scheduledAt < lookedAt);
    if (stale.length === 0) return;
    const keep = live.filter((p) => p.scheduledAt >= lookedAt);
    if (keep.length > 0) this.pending.set(queue, keep);
    else this.pending.delete(queue);
    for (const p of stale) {
      if (!p.scheduled) continue;
      try {
        await p.scheduled.cancel();
        this.counts.cancelled += p.scheduled.count;
      } catch (e) {
        this.deps.log.info(
          `${queue}: a scheduled continuation could not be cancelled (it may have come due): ${ensureError(e).message}`,
        );
      }
    }
  }

  /**
   * Before this process goes (a scale-in): each queue with a continuation pending is looked at
   * once; an empty one has its continuations cancelled, so nothing wakes the fleet for nothing.
   * A failed look keeps them (they are the protection). Never throws.
   */
  async cancelIdle(): Promise<void> {
    const now = this.deps.clock.now();
    // Only what can be cancelled is worth a look (a publisher may hand back no way to cancel).
    const queues = [...this.pending.keys()].filter((q) => this.live(q, now).some((p) => p.scheduled));
    let cancelled = 0;
    for (const queue of queues) {
      const lookedAt = this.deps.clock.now();
      try {
        if ((await this.deps.depth(queue)) !== 0) continue;
      } catch (e) {
        this.deps.log.warn(`${queue}: depth unknown at shutdown, its continuation stays: ${ensureError(e).message}`);
        continue;
      }
      const before = this.counts.cancelled;
      await this.seenEmpty(queue, lookedAt + 1);
      cancelled += this.counts.cancelled - before;
    }
    if (cancelled > 0)
      this.deps.log.info(`shutdown: ${cancelled} scheduled continuation(s) cancelled, their queues are empty`);
  }

  snapshot(): ContinuationCounts {
    const now = this.deps.clock.now();
    let pending = 0;
    for (const queue of this.pending.keys()) pending += this.live(queue, now).length;
    return { ...this.counts, pending };
  }

  /** The queue's continuations not yet due; the due ones are forgotten (they fired). */
  private live(queue: string, now: number): Pending[] {
    const all = this.pending.get(queue);
    if (!all) return [];
    const live = all.filter((p) => p.dueAt > now);
    if (live.length === 0) this.pending.delete(queue);
    else if (live.length !== all.length) this.pending.set(queue, live);
    return live;
  }
}
