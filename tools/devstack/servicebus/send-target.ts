/**
 * Something messages are sent to: a queue, or a topic that copies each message to the
 * subscriptions whose filter matches. Owns sequence numbers and scheduled messages.
 */
import type { Message } from 'rhea';

import { encodeMessage, matchesFilter, scheduledEnqueueTime } from './amqp-message';
import type { CorrelationFilter } from './config';
import type { Journal } from './journal';
import type { JournalOp } from './journal-codec';
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
  journal: Journal;
}

interface Scheduled {
  payload: Message;
  at: number;
  timer: TimerHandle | undefined;
  encoded?: Buffer;
}

export class SendTarget {
  private sequence = 0;
  private readonly scheduled = new Map<number, Scheduled>();

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
    const entry = this.arm(seq, payload, at);
    this.deps.journal.append(() => ({
      kind: 'schedule',
      target: this.path,
      seq,
      at,
      payload: (entry.encoded ??= encodeMessage(payload)),
    }));
    return seq;
  }

  /**
   * The drop fault: the sender is answered as for a stored message (a sequence number, which
   * stays used across a restart), but nothing is kept or delivered.
   */
  discard(): number {
    this.deps.stats.inc('messagesIn');
    this.deps.stats.inc('dropped');
    const seq = ++this.sequence;
    this.deps.journal.append(() => ({ kind: 'sequence', owner: this.path, value: seq }));
    return seq;
  }

  /** False when no scheduled message has that sequence number (already enqueued or cancelled). */
  cancel(sequenceNumber: number): boolean {
    const entry = this.scheduled.get(sequenceNumber);
    if (!entry) return false;
    this.deps.timers.cancel(entry.timer);
    this.scheduled.delete(sequenceNumber);
    this.deps.journal.append(() => ({ kind: 'unschedule', target: this.path, seq: sequenceNumber }));
    return true;
  }

  get scheduledCount(): number {
    return this.scheduled.size;
  }

  /** The receivable entities this target feeds. */
  get stores(): MessageStore[] {
    return this.routes.map((r) => r.store);
  }

  /** Its sequence number and scheduled messages as journal operations, for a compaction. */
  snapshot(): JournalOp[] {
    const ops: JournalOp[] = [{ kind: 'sequence', owner: this.path, value: this.sequence }];
    for (const [seq, s] of this.scheduled)
      ops.push({
        kind: 'schedule',
        target: this.path,
        seq,
        at: s.at,
        payload: (s.encoded ??= encodeMessage(s.payload)),
      });
    return ops;
  }

  /** Start-up: numbering continues after the highest number handed out. */
  restoreSequence(value: number): void {
    this.sequence = Math.max(this.sequence, value);
  }

  /** Start-up: a scheduled message fires at its time (at once if that has passed). */
  restoreScheduled(seq: number, payload: Message, at: number, encoded: Buffer): void {
    this.arm(seq, payload, at).encoded = encoded;
  }

  private arm(seq: number, payload: Message, at: number): Scheduled {
    const entry: Scheduled = { payload, at, timer: undefined };
    entry.timer = this.deps.timers.after(at - this.deps.now(), () => {
      this.scheduled.delete(seq);
      this.deps.journal.append(() => ({ kind: 'unschedule', target: this.path, seq }));
      this.enqueue(payload, seq, entry.encoded);
    });
    this.scheduled.set(seq, entry);
    return entry;
  }

  private enqueue(payload: Message, seq: number, known?: Buffer): void {
    let encoded = known;
    const shared = (): Buffer => (encoded ??= encodeMessage(payload));
    for (const route of this.routes) {
      if (matchesFilter(route.filter, payload)) route.store.enqueue(payload, seq, shared);
    }
  }
}
