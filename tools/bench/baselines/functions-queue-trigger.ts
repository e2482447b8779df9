/**
 * The Azure Functions queue trigger's listener (QueueListener in azure-webjobs-sdk), per queue:
 * get up to batchSize (16) messages, start each as its own invocation, and fetch the next batch
 * as soon as no more than newBatchThreshold (batchSize / 2) are still running. An empty poll
 * waits by the randomized exponential back-off (100 ms up to maxPollingInterval, 60 s); a poll
 * that found work resets it. A function writing to a queue of the same app wakes that queue's
 * listener early (the SDK's SharedQueueWatcher), modelled by notify().
 */
import { ensureError } from '../../../shared/errors';
import type { QueueMessage } from '../../../shared/ports';
import {
  FUNCTIONS_MAX_POLL_MS,
  FUNCTIONS_MIN_POLL_MS,
  idleState,
  RandomizedExponentialBackoff,
} from './functions-backoff';
import { interruptibleSleep, processAndDelete, Signal } from './handle';
import { type Listener, LISTENER_MAX_RUN_MS, type ListenerDeps } from './listener';

const FUNCTIONS_BATCH = 16;
const FUNCTIONS_NEW_BATCH_THRESHOLD = FUNCTIONS_BATCH / 2;
/** The trigger's visibility timeout (renewed while a function runs; ours finish well within it). */
const VISIBILITY_SECONDS = 600;

export function startFunctionsQueueListener(deps: ListenerDeps): Listener {
  const stopping = new Signal();
  const backoff = new RandomizedExponentialBackoff(FUNCTIONS_MIN_POLL_MS, FUNCTIONS_MAX_POLL_MS, deps.random);
  /** Each invocation running, with its message's id and when it was received. */
  const processing = new Map<Promise<unknown>, { id: string; since: number }>();
  let wake = new Signal();
  let foundSinceLastDelay = false;

  const invoke = (m: Parameters<typeof processAndDelete>[2]): void => {
    const p: Promise<unknown> = processAndDelete(deps.queue, deps.processor, m, deps.log, {
      maxDequeueCount: deps.maxDequeueCount,
      onFailure: async (failed) => deps.release?.(failed.id, failed.popReceipt),
    }).finally(() => processing.delete(p));
    processing.set(p, { id: m.id, since: Date.now() });
  };

  const run = async (): Promise<void> => {
    const started = Date.now();
    if (deps.idleMs !== undefined) {
      // Start where a long idle would have left the back-off, mid-sleep (see idleState).
      const idle = idleState(deps.idleMs, FUNCTIONS_MIN_POLL_MS, FUNCTIONS_MAX_POLL_MS, deps.random);
      backoff.restore(idle.state);
      await interruptibleSleep(idle.untilNextPollMs, stopping.fired, wake.fired);
    }
    while (!stopping.done && Date.now() - started < LISTENER_MAX_RUN_MS) {
      // A notification that arrives while this poll is in flight shortens the next wait.
      wake = new Signal();
      let messages: QueueMessage[];
      try {
        messages = await deps.queue.receive(FUNCTIONS_BATCH, VISIBILITY_SECONDS);
      } catch (e) {
        deps.log.warn(`${deps.queue.name}: receive failed: ${ensureError(e).message}`);
        messages = [];
      }
      if (messages.length === 0) {
        const delay = backoff.next(foundSinceLastDelay);
        foundSinceLastDelay = false;
        await interruptibleSleep(delay, stopping.fired, wake.fired);
        continue;
      }
      for (const m of messages) invoke(m);
      foundSinceLastDelay = true;
      // Bounded by the number in flight, which only shrinks while we wait here.
      while (processing.size > FUNCTIONS_NEW_BATCH_THRESHOLD) await Promise.race(processing.keys());
    }
    await Promise.allSettled([...processing.keys()]);
  };
  const loop = run();
  return {
    stop: async () => {
      stopping.fire();
      await loop;
    },
    notify: () => wake.fire(),
    inFlight: () => [...processing.values()].map(({ id, since }) => ({ id, ms: Date.now() - since })),
  };
}
