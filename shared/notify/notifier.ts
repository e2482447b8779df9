/**
 * What the steps tell Service Bus, in the pipeline's words: "queue Q has work", "come back
 * to Q later", "check batch B after a while". It builds every WorkDetected event (storage
 * account, role from the queue's name), so no step assembles one by hand.
 */
import { PermanentError } from '../errors';
import type { EntityNames, Role } from '../names';
import { type WatchdogCheck, watchdogDelayMs, type WorkDetected, type WorkPublisher } from './events';

export interface Wake {
  queue: string;
  /** Compressed bytes of work just enqueued (a load signal); 0 when unknown. */
  payloadSize?: number;
}

export class Notifier {
  constructor(
    private readonly publisher: WorkPublisher,
    private readonly storageAccount: string,
    private readonly names: EntityNames,
    private readonly watchdogSlaSeconds: number,
  ) {}

  private event(w: Wake, batchId?: string): WorkDetected {
    const role: Role | undefined = this.names.roleOf(w.queue);
    if (!role) throw new PermanentError(`queue ${w.queue} is not one this app drains`);
    return { storageAccount: this.storageAccount, queueName: w.queue, payloadSize: w.payloadSize ?? 0, role, ...(batchId ? { batchId } : {}) };
  }

  /** Work is on these queues. Callers enqueue first and wake second: no wake-up is lost. */
  async wake(queues: readonly Wake[], batchId?: string): Promise<void> {
    await this.publisher.publish(queues.map((q) => this.event(q, batchId)));
  }

  /** Hands a queue over to a later wake-up, now or after a delay (a scheduled message). */
  async continuation(queue: string, delayMs: number): Promise<void> {
    await this.publisher.publish([this.event({ queue })], { delayMs });
  }

  /** A batch was just accepted: wake its queues and schedule its first watchdog check. */
  async accepted(batchId: string, queues: readonly Wake[]): Promise<void> {
    await this.wake(queues, batchId);
    await this.scheduleCheck({ v: 1, batchId, attempt: 1, settledBefore: 0 });
  }

  /** Schedules a watchdog check at the delay its attempt number gives; free until it fires. */
  async scheduleCheck(check: WatchdogCheck): Promise<number> {
    const delayMs = watchdogDelayMs(this.watchdogSlaSeconds, check.attempt);
    await this.publisher.scheduleWatchdog(check, delayMs);
    return delayMs;
  }

  close(): Promise<void> {
    return this.publisher.close();
  }
}
