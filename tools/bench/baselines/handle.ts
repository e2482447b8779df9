/**
 * Processing one received message the way both polling baselines do: a message past the
 * maximum dequeue count goes to poison; a success is deleted; a failure is left to reappear
 * (or released at once, as the Functions queue trigger does). Same processors, same poison
 * queue, same delete-after-success as pushdrain's drainer, so only the polling differs.
 */
import { ensureError, PermanentError } from '../../../shared/errors';
import type { DrainQueue, Logger, MessageProcessor, QueueMessage } from '../../../shared/ports';

export interface HandleOptions {
  maxDequeueCount: number;
  /** Called after a failure that is not permanent (the Functions trigger releases the message). */
  onFailure?: (m: QueueMessage) => Promise<void>;
}

/** True when the message was processed and deleted. */
export async function processAndDelete(
  queue: DrainQueue,
  processor: MessageProcessor,
  m: QueueMessage,
  log: Logger,
  options: HandleOptions,
): Promise<boolean> {
  try {
    if (m.dequeueCount > options.maxDequeueCount) {
      await poison(queue, processor, m, `dequeued ${m.dequeueCount} times (max ${options.maxDequeueCount})`);
      return false;
    }
    await processor.process(m);
  } catch (e) {
    const err = ensureError(e);
    if (err instanceof PermanentError) {
      await poison(queue, processor, m, err.message).catch((pe: unknown) =>
        log.error(`${queue.name}: poisoning ${m.id} failed: ${ensureError(pe).message}`),
      );
    } else {
      log.warn(`${queue.name}: message ${m.id} failed: ${err.message}`);
      await options.onFailure?.(m).catch(() => undefined);
    }
    return false;
  }
  try {
    await queue.delete(m);
    return true;
  } catch (e) {
    log.warn(`${queue.name}: delete of ${m.id} failed: ${ensureError(e).message}`);
    return false;
  }
}

async function poison(queue: DrainQueue, processor: MessageProcessor, m: QueueMessage, reason: string): Promise<void> {
  await queue.poison(m, reason);
  await processor.onPoison?.(m, reason);
}

/** A sleep that a stop (or a notification) cuts short. */
export function interruptibleSleep(ms: number, ...interrupts: Promise<unknown>[]): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const sleep = new Promise<void>((r) => (timer = setTimeout(r, ms)));
  return Promise.race([sleep, ...interrupts]).then(() => clearTimeout(timer));
}

/** A one-shot signal: `fired` resolves once `fire()` is called. */
export class Signal {
  private resolve: () => void = () => {};
  readonly fired = new Promise<void>((r) => (this.resolve = r));
  done = false;

  fire(): void {
    this.done = true;
    this.resolve();
  }
}
