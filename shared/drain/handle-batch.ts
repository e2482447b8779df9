/**
 * What a dequeue task does with one received batch: process every message, run the
 * processor's after-batch hook, and delete only what succeeded. A permanent error, or too
 * many deliveries, moves a message to poison; any other failure leaves it to reappear after
 * its visibility timeout.
 */
import { ensureError, PermanentError } from '../errors';
import type { DrainQueue, Logger, MessageProcessor, QueueMessage } from '../ports';

/** The counters a batch moves (a subset of DrainStats). */
export interface BatchCounts {
  processed: number;
  failed: number;
  poisoned: number;
}

export class BatchHandler {
  constructor(
    private readonly queue: DrainQueue,
    private readonly processor: MessageProcessor,
    private readonly log: Logger,
    private readonly maxDequeueCount: number,
    private readonly counts: BatchCounts,
  ) {}

  async handle(messages: readonly QueueMessage[]): Promise<void> {
    const results = await Promise.all(messages.map((m) => this.one(m)));
    const ok = messages.filter((_, i) => results[i]);
    if (ok.length === 0) return;
    if (this.processor.afterBatch) {
      try {
        await this.processor.afterBatch();
      } catch (e) {
        // Not deleting: the messages reappear and are reprocessed (idempotently), which retries the hook.
        this.counts.failed += ok.length;
        this.log.warn(`${this.queue.name}: after-batch step failed, ${ok.length} messages will be redelivered: ${ensureError(e).message}`);
        return;
      }
    }
    await Promise.all(
      ok.map(async (m) => {
        try {
          await this.queue.delete(m);
          this.counts.processed++;
        } catch (e) {
          // Processed but not deleted: it comes back and is processed again, idempotently.
          this.log.warn(`${this.queue.name}: delete of ${m.id} failed: ${ensureError(e).message}`);
        }
      }),
    );
  }

  /** True when the message was processed and may be deleted. */
  private async one(m: QueueMessage): Promise<boolean> {
    try {
      if (m.dequeueCount > this.maxDequeueCount) {
        await this.poison(m, `dequeued ${m.dequeueCount} times (max ${this.maxDequeueCount})`);
        return false;
      }
      await this.processor.process(m);
      return true;
    } catch (e) {
      const err = ensureError(e);
      if (err instanceof PermanentError) {
        await this.poison(m, err.message).catch((pe) => this.log.error(`${this.queue.name}: poisoning ${m.id} failed: ${ensureError(pe).message}`));
      } else {
        this.counts.failed++;
        this.log.warn(`${this.queue.name}: message ${m.id} failed (attempt ${m.dequeueCount}), it reappears after the visibility timeout: ${err.message}`);
      }
      return false;
    }
  }

  private async poison(m: QueueMessage, reason: string): Promise<void> {
    await this.queue.poison(m, reason);
    this.counts.poisoned++;
    this.log.warn(`${this.queue.name}: message ${m.id} moved to poison: ${reason}`);
    await this.processor.onPoison?.(m, reason);
  }
}
