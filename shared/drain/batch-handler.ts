/**
 * What a dequeue task does with one received batch: process every message, run the
 * processor's after-batch hook, and delete only what succeeded. A permanent error, or too
 * many deliveries, moves a message to poison; any other failure leaves it to reappear after
 * its visibility timeout. While the batch is in work its visibility is kept (VisibilityKeeper);
 * a message another delivery took meanwhile is a duplicate, counted, not an error.
 */
import { ensureError, PermanentError } from '../errors';
import type { Clock, DrainQueue, Logger, MessageProcessor, QueueMessage } from '../ports';
import { MessageTakenError } from '../queue/message-taken-error';
import type { ReceiveSizer } from './receive-sizer';
import { VisibilityKeeper } from './visibility-keeper';

/** The counters a batch moves (a subset of DrainStats). */
export interface BatchCounts {
  processed: number;
  failed: number;
  poisoned: number;
  /** Processed here while another delivery had the message too: work done twice. */
  duplicates: number;
  /** Visibility extensions (one Update Message each). */
  extensions: number;
}

export interface BatchHandlerDeps {
  queue: DrainQueue;
  processor: MessageProcessor;
  log: Logger;
  /** Past this many deliveries a message goes to poison unprocessed. */
  maxDequeueCount: number;
  /** Moved by every batch handled. */
  counts: BatchCounts;
  /** The visibility timeout the batch was received with: extensions renew it. Absent: no extension. */
  visibilityTimeoutSeconds?: number;
  /** Told how long each batch was held (received to deleted), with `clock`; given each batch back once settled. */
  sizer?: ReceiveSizer;
  clock?: Clock;
}

export class BatchHandler {
  private readonly keeper: VisibilityKeeper | undefined;

  constructor(private readonly deps: BatchHandlerDeps) {
    this.keeper =
      deps.visibilityTimeoutSeconds !== undefined
        ? new VisibilityKeeper(deps.queue, deps.visibilityTimeoutSeconds, deps.counts, deps.log)
        : undefined;
  }

  /**
   * `receivedAt`: when the receive was sent (clock ms): the visibility timeout may have started
   * any time after, so the keeper and the sizer count from there. The sizer counted the batch as
   * held when its receive was sized (ReceiveSizer.take); the batch is given back here, settled.
   */
  async handle(messages: readonly QueueMessage[], receivedAt?: number): Promise<void> {
    const { sizer, clock } = this.deps;
    // Everything the stage held in this process with it: the sizer's rate is per process.
    const heldWith = sizer?.held ?? messages.length;
    try {
      await this.settle(messages, receivedAt);
    } finally {
      if (sizer && clock && receivedAt !== undefined)
        sizer.observe(messages.length, clock.now() - receivedAt, heldWith);
      sizer?.giveBack(messages.length);
    }
  }

  private async settle(messages: readonly QueueMessage[], receivedAt: number | undefined): Promise<void> {
    const { clock } = this.deps;
    const held = this.keeper?.hold(messages, clock && receivedAt !== undefined ? clock.now() - receivedAt : 0);
    let ok: QueueMessage[];
    try {
      ok = await this.work(messages);
    } finally {
      // Before any delete: an update in flight changes the receipt the delete must use.
      await held?.release();
    }
    const { counts, queue, log } = this.deps;
    await Promise.all(
      ok.map(async (m) => {
        if (held?.taken.has(m.id)) {
          counts.duplicates++;
          return;
        }
        try {
          await queue.delete(m);
          counts.processed++;
        } catch (e) {
          // Someone else has it now: the work was done twice (idempotently); nothing to log per message.
          if (e instanceof MessageTakenError) counts.duplicates++;
          // Processed but not deleted: it comes back and is processed again, idempotently.
          else log.warn(`${queue.name}: delete of ${m.id} failed: ${ensureError(e).message}`);
        }
      }),
    );
  }

  /** Processes the batch and runs the after-batch hook: the messages that may be deleted. */
  private async work(messages: readonly QueueMessage[]): Promise<QueueMessage[]> {
    const results = await Promise.all(messages.map((m) => this.one(m)));
    const ok = messages.filter((_, i) => results[i]);
    if (ok.length === 0 || !this.deps.processor.afterBatch) return ok;
    try {
      await this.deps.processor.afterBatch();
      return ok;
    } catch (e) {
      // Not deleting: the messages reappear and are reprocessed (idempotently), which retries the hook.
      this.deps.counts.failed += ok.length;
      this.deps.log.warn(
        `${this.deps.queue.name}: after-batch step failed, ${ok.length} messages will be redelivered: ${ensureError(e).message}`,
      );
      return [];
    }
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
