/**
 * What the steps tell Service Bus, in the pipeline's words: "queue Q has work", "come back to Q
 * later", "check batch B after a while", "the scaling agent looks again". The messages are
 * shared/bus/'s; this builds every WorkDetected event (storage account, role from the queue's
 * name), so no step assembles one by hand.
 */
import type { BusPublisher, ScheduledMessages } from '../bus/bus-publisher';
import { MESSAGE_TYPES } from '../bus/message-types';
import { scaleCheckOutgoing } from '../bus/scale-check';
import { type WatchdogCheck, watchdogCheckOutgoing } from '../bus/watchdog-check';
import { type WorkDetected, workDetectedOutgoing } from '../bus/work-detected';
import { PermanentError } from '../errors';
import { type EntityNames, ROLE_OF } from '../names';
import type { PublisherHealth } from './failover-state';

/** Delay before check `attempt` (1-based): SLA, 2×SLA, 4×SLA… capped at a day. */
function watchdogDelayMs(slaSeconds: number, attempt: number): number {
  return Math.min(slaSeconds * 1000 * 2 ** (attempt - 1), 24 * 3600 * 1000);
}

const WORK = MESSAGE_TYPES.WorkDetected.entity;
const SCALE = MESSAGE_TYPES.ScaleCheck.entity;
const WATCHDOG = MESSAGE_TYPES.WatchdogCheck.entity;

/** A queue that has work, for Notifier.wake; a manifest records one per queue of its batch. */
export interface Wake {
  queue: string;
  /** Compressed bytes of work just enqueued (a load signal); 0 when unknown. */
  payloadSize?: number;
  /** Chunks of the batch enqueued on it (the manifest's record; the event does not carry it). */
  chunks?: number;
}

export class Notifier {
  constructor(
    private readonly publisher: BusPublisher,
    private readonly storageAccount: string,
    private readonly names: EntityNames,
    private readonly watchdogSlaSeconds: number,
  ) {}

  private event(w: Wake, batchId?: string, traceparent?: string): WorkDetected {
    const stage = this.names.stageOf(w.queue);
    if (!stage) throw new PermanentError(`queue ${w.queue} is not one this app drains`);
    return {
      storageAccount: this.storageAccount,
      queueName: w.queue,
      payloadSize: w.payloadSize ?? 0,
      role: ROLE_OF[stage],
      ...(batchId ? { batchId } : {}),
      ...(traceparent ? { traceparent } : {}),
    };
  }

  /** Work is on these queues. Callers enqueue first and wake second: no wake-up is lost. */
  async wake(queues: readonly Wake[], batchId?: string, traceparent?: string): Promise<void> {
    if (queues.length === 0) return;
    await this.publisher.send(
      WORK,
      queues.map((q) => workDetectedOutgoing(this.event(q, batchId, traceparent))),
    );
  }

  /** Hands a queue over to a later wake-up, now or after a delay (a scheduled message, which may come back cancellable). */
  continuation(queue: string, delayMs: number): Promise<ScheduledMessages | void> {
    const message = workDetectedOutgoing(this.event({ queue }));
    return delayMs > 0 ? this.publisher.schedule(WORK, [message], delayMs) : this.publisher.send(WORK, [message]);
  }

  /** Asks for `count` more drains of a deep queue: fan-out events, held by the instances that take them. */
  async fanOut(queue: string, count: number): Promise<void> {
    if (count <= 0) return;
    const one: WorkDetected = { ...this.event({ queue }), fanOut: true };
    await this.publisher.send(
      WORK,
      Array.from({ length: count }, () => workDetectedOutgoing(one)),
    );
  }

  /**
   * A batch was just accepted: wake its queues and schedule its first watchdog check. Returns
   * the check's sequence numbers, for the manifest, when the publisher can cancel it later.
   */
  async accepted(batchId: string, queues: readonly Wake[], traceparent?: string): Promise<string[] | undefined> {
    await this.wake(queues, batchId, traceparent);
    return (await this.scheduleCheck({ v: 1, batchId, attempt: 1, settledBefore: 0 })).sequenceNumbers;
  }

  /** The scaling agent's next look, `delayMs` from now. */
  async scheduleScaleCheck(delayMs: number): Promise<void> {
    await this.publisher.schedule(SCALE, [scaleCheckOutgoing()], delayMs);
  }

  /**
   * Schedules a watchdog check at the delay its attempt number gives; free until it fires.
   * `sequenceNumbers`: what cancels it (cancelChecks), when the publisher hands them back.
   */
  async scheduleCheck(check: WatchdogCheck): Promise<{ delayMs: number; sequenceNumbers?: string[] }> {
    const delayMs = watchdogDelayMs(this.watchdogSlaSeconds, check.attempt);
    const scheduled = await this.publisher.schedule(WATCHDOG, [watchdogCheckOutgoing(check)], delayMs);
    const seq = this.publisher.cancel && scheduled ? scheduled.sequenceNumbers : undefined;
    return { delayMs, ...(seq && seq.length > 0 ? { sequenceNumbers: [...seq] } : {}) };
  }

  /**
   * Takes back scheduled watchdog checks of a batch that no longer needs them (it finished), so
   * none comes due to start an instance for nothing. Rejects when one is no longer scheduled.
   */
  async cancelChecks(sequenceNumbers: readonly string[]): Promise<void> {
    if (sequenceNumbers.length === 0 || !this.publisher.cancel) return;
    await this.publisher.cancel(WATCHDOG, sequenceNumbers);
  }

  health(): PublisherHealth | undefined {
    return this.publisher.health?.();
  }

  close(): Promise<void> {
    return this.publisher.close();
  }
}
