/**
 * What a dequeue task does with one received batch: process every message, run the
 * processor's after-batch hook, and delete only what succeeded. A permanent error, or too
 * many deliveries, moves a message to poison; any other failure leaves it to reappear after
 * its visibility timeout. While the batch is in work its visibility is kept (VisibilityKeeper);
 * a message another delivery took meanwhile is a duplicate, counted, not an error.
 *
 * A message in a newer format than this build reads (NewerFormatError: a deploy has old and new
 * instances on the same queues) is neither a failure nor poison: once the batch is released it is
 * handed back, visible again after a short delay for an instance that reads it, and the handback
 * is recorded in the message so that it does not count toward poison (queue/handbacks.ts). Said
 * once per format and version in this process's log. A message nobody has read after
 * MAX_HANDBACKS handbacks (about an hour: no newer instance is running, say after a roll-back)
 * goes to poison with that reason, so the loop is bounded.
 */
import { ensureError, NewerFormatError, PermanentError } from '../errors';
import type { Clock, DrainQueue, Logger, MessageProcessor, QueueMessage } from '../ports';
import { countedDeliveries, handbacksOf } from '../queue/handbacks';
import { MessageTakenError } from '../queue/message-taken-error';
import type { DrainCounter } from './drain-counts';
import type { ReceiveSizer } from './receive-sizer';
import { VisibilityKeeper } from './visibility-keeper';

/** Seconds a handed-back message stays invisible: long enough not to spin, short for a newer instance. */
const HANDBACK_DELAY_SECONDS = 15;
/** Handbacks after which a message nobody reads goes to poison: 240 × 15 s = an hour at least. */
export const MAX_HANDBACKS = 240;

/** Formats and versions already said in the log, per process: the line comes once, not per message. */
const handbacksSaid = new Set<string>();

export interface BatchHandlerDeps {
  queue: DrainQueue;
  processor: MessageProcessor;
  log: Logger;
  /** Past this many deliveries a message goes to poison unprocessed; handbacks do not count (queue/handbacks.ts). */
  maxDequeueCount: number;
  /** Seconds a handed-back message stays invisible. @defaultValue HANDBACK_DELAY_SECONDS */
  handbackDelaySeconds?: number;
  /** Where every batch handled counts what became of its messages. */
  counts: DrainCounter;
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
    const newer = new Map<QueueMessage, NewerFormatError>();
    try {
      ok = await this.work(messages, newer);
    } finally {
      // Before any delete or handback: an update in flight changes the receipt they must use.
      await held?.release();
    }
    const { counts, queue, log } = this.deps;
    await Promise.all([...newer].filter(([m]) => !held?.taken.has(m.id)).map(([m, err]) => this.handBack(m, err)));
    await Promise.all(
      ok.map(async (m) => {
        if (held?.taken.has(m.id)) {
          counts.add('duplicates');
          return;
        }
        try {
          await queue.delete(m);
          counts.add('processed');
        } catch (e) {
          // Someone else has it now: the work was done twice (idempotently); nothing to log per message.
          if (e instanceof MessageTakenError) counts.add('duplicates');
          // Processed but not deleted: it comes back and is processed again, idempotently.
          else log.warn(`${queue.name}: delete of ${m.id} failed: ${ensureError(e).message}`);
        }
      }),
    );
  }

  /** Processes the batch and runs the after-batch hook: the messages that may be deleted. */
  private async work(
    messages: readonly QueueMessage[],
    newer: Map<QueueMessage, NewerFormatError>,
  ): Promise<QueueMessage[]> {
    const results = await Promise.all(messages.map((m) => this.one(m)));
    messages.forEach((m, i) => {
      const r = results[i];
      if (r instanceof NewerFormatError) newer.set(m, r);
    });
    const ok = messages.filter((_, i) => results[i] === true);
    if (ok.length === 0 || !this.deps.processor.afterBatch) return ok;
    try {
      await this.deps.processor.afterBatch();
      return ok;
    } catch (e) {
      // Not deleting: the messages reappear and are reprocessed (idempotently), which retries the hook.
      this.deps.counts.add('failed', ok.length);
      this.deps.log.warn(
        `${this.deps.queue.name}: after-batch step failed, ${ok.length} messages will be redelivered: ${ensureError(e).message}`,
      );
      return [];
    }
  }

  /** True when the message was processed and may be deleted; the error when it is to be handed back. */
  private async one(m: QueueMessage): Promise<boolean | NewerFormatError> {
    try {
      // Handbacks are deliveries Storage counted but nobody tried: only the text is read for them, and only here.
      if (m.dequeueCount > this.deps.maxDequeueCount && countedDeliveries(m) > this.deps.maxDequeueCount) {
        const hb = handbacksOf(m.text);
        await this.poison(
          m,
          `dequeued ${m.dequeueCount} times${hb > 0 ? `, ${hb} of them handbacks,` : ''} (max ${this.deps.maxDequeueCount})`,
        );
        return false;
      }
      await this.deps.processor.process(m);
      return true;
    } catch (e) {
      const err = ensureError(e);
      if (err instanceof NewerFormatError) return err;
      if (err instanceof PermanentError) {
        await this.poison(m, err.message).catch((pe) =>
          this.deps.log.error(`${this.deps.queue.name}: poisoning ${m.id} failed: ${ensureError(pe).message}`),
        );
      } else {
        this.deps.counts.add('failed');
        this.deps.log.warn(
          `${this.deps.queue.name}: message ${m.id} failed (attempt ${m.dequeueCount}), it reappears after the visibility timeout: ${err.message}`,
        );
      }
      return false;
    }
  }

  private async handBack(m: QueueMessage, err: NewerFormatError): Promise<void> {
    const { queue, log, counts } = this.deps;
    const handed = handbacksOf(m.text);
    try {
      if (handed >= MAX_HANDBACKS) {
        await this.poison(m, `${err.message}, and no instance read it in ${handed} handbacks`);
        return;
      }
      if (!queue.handBack) {
        // A queue that cannot record a handback: the message reappears after its visibility timeout.
        counts.add('failed');
        log.warn(`${queue.name}: message ${m.id} left for its visibility timeout: ${err.message}`);
        return;
      }
      const delay = this.deps.handbackDelaySeconds ?? HANDBACK_DELAY_SECONDS;
      await queue.handBack(m, delay);
      counts.add('handedBack');
      const said = `${queue.name}\n${err.format}\n${err.version}`;
      if (!handbacksSaid.has(said)) {
        handbacksSaid.add(said);
        log.warn(
          `${queue.name}: ${err.message}: handing such messages back for a newer instance (visible again in ${delay} s, not counted toward poison); said once per format and version`,
        );
      }
    } catch (e) {
      if (e instanceof MessageTakenError) counts.add('duplicates');
      else
        log.warn(
          `${queue.name}: handing back ${m.id} failed, it reappears after its visibility timeout: ${ensureError(e).message}`,
        );
    }
  }

  private async poison(m: QueueMessage, reason: string): Promise<void> {
    await this.deps.queue.poison(m, reason);
    this.deps.counts.add('poisoned');
    this.deps.log.warn(`${this.deps.queue.name}: message ${m.id} moved to poison: ${reason}`);
    await this.deps.processor.onPoison?.(m, reason);
  }
}
