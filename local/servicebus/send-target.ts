/**
 * Something messages are sent to: a queue, or a topic that copies each message to the
 * subscriptions whose filter matches. Owns sequence numbers and scheduled messages.
 */
import type { Message } from 'rhea';

import { matchesFilter, scheduledEnqueueTime } from './amqp-message';
import type { CorrelationFilter } from './config';
import type { MessageStore } from './message-store';
import type { Stats } from './stats';
import type { TimerHandle, Timers } from './timers';

export interface Route {
  store: MessageStore;
  filter: CorrelationFilter;
}

export interface TargetDeps {
  timers: Timers;
  stats: Stats;
  now: () => number;
}

export class SendTarget {
  private sequence = 0;
  private readonly scheduled = new Map<number, TimerHandle | undefined>();

  constructor(
    readonly path: string,
    private readonly routes: readonly Route[],
    private readonly deps: TargetDeps,
  ) {}

  /** A message from a sender link; honours `x-opt-scheduled-enqueue-time`. */
  accept(payload: Message): number {
    this.deps.stats.inc('messagesIn');
    const at = scheduledEnqueueTime(payload);
    if (at !== undefined && at > this.deps.now()) return this.schedule(payload, at);
    const seq = ++this.sequence;
    this.enqueue(payload, seq);
    return seq;
  }

  /** Enqueues at `at` (epoch ms); the sequence number is assigned now, as cancel needs it. */
  schedule(payload: Message, at: number): number {
    const seq = ++this.sequence;
    const timer = this.deps.timers.after(at - this.deps.now(), () => {
      this.scheduled.delete(seq);
      this.enqueue(payload, seq);
    });
    this.scheduled.set(seq, timer);
    return seq;
  }

  /** False when no scheduled message has that sequence number (already enqueued or cancelled). */
  cancel(sequenceNumber: number): boolean {
    if (!this.scheduled.has(sequenceNumber)) return false;
    this.deps.timers.cancel(this.scheduled.get(sequenceNumber));
    this.scheduled.delete(sequenceNumber);
    return true;
  }

  get scheduledCount(): number {
    return this.scheduled.size;
  }

  private enqueue(payload: Message, seq: number): void {
    for (const route of this.routes) {
      if (matchesFilter(route.filter, payload)) route.store.enqueue(payload, seq);
    }
  }
}
