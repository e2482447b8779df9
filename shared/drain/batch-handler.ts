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

export interface BatchHandlerDeps {
  queue: DrainQueue;
  processor: MessageProcessor;
  log: Logger;
  /** Past this many deliveries a message goes to poison unprocessed. */
  maxDequeueCount: number;
  /** Moved by every batch handled. */
  counts: BatchCounts;
}

export class BatchHandler {
  constructor(private readonly deps: BatchHandlerDeps) {}

  async handle(messages: readonly QueueMessage[]): Promise<void> {
    const results = await Promise.all(messages.map((m) => this.one(m)));
    const ok = messages.filter((_, i) => results[i]);
    if (ok.length === 0) return;
    if (this.deps.processor.afterBatch) {
      try {
        await this.deps.processor.afterBatch();
      } catch (e) {
        // Not deleting: the messages reappear and are reprocessed (idempotently), which retries the hook.
        this.deps.counts.failed += ok.length;
        this.deps.log.warn(
          `${this.deps.queue.name}: after-batch step failed, ${ok.length} messages will be redelivered: ${ensureError(e).message}`,
        );
        return;
      }
    }
    await Promise.all(
      ok.map(async (m) => {
        try {
          await this.deps.queue.delete(m);
          this.deps.counts.processed++;
        } catch (e) {
          // Processed but not deleted: it comes back and is processed again, idempotently.
          this.deps.log.warn(`${this.deps.queue.name}: delete of ${m.id} failed: ${ensureError(e).message}`);
        }
      }),
    );
  }

  /** True when the message was processed and may be deleted. */
  private async one(m: QueueMessage): Promise<boolean> {
    try {
      if (m.dequeueCount > this.deps.maxDequeueCount) {
        await this.poison(m, `dequeued ${m.dequeueCount} times (max ${this.deps.maxDequeueCount})`);
        return false;
      }
      await this.deps.processor.process(m);
      return true;
    } catch (e) {
      const err = ensureError(e);
      if (err instanceof PermanentError) {
        await this.poison(m, err.message).catch((pe) =>
          this.deps.log.error(`${this.deps.queue.name}: poisoning ${m.id} failed: ${ensureError(pe).message}`),
        );
      } else {
        this.deps.counts.failed++;
        this.deps.log.warn(
          `${this.deps.queue.name}: message ${m.id} failed (attempt ${m.dequeueCount}), it reappears after the visibility timeout: ${err.message}`,
        );
      }
      return false;
    }
  }

  private async poison(m: QueueMessage, reason: string): Promise<void> {
    await this.deps.queue.poison(m, reason);
    this.deps.counts.poisoned++;
    this.deps.log.warn(`${this.deps.queue.name}: message ${m.id} moved to poison: ${reason}`);
    await this.deps.processor.onPoison?.(m, reason);
  }
}
