/**
 * The classic queue listener the original guidance warns against: one loop per queue that
 * asks for up to 32 messages, processes them, and when the queue is empty waits a fixed 1 s
 * and asks again, forever. Idle, every queue costs 3,600 receives an hour.
 */
import { ensureError } from '../../../shared/errors';
import type { QueueMessage } from '../../../shared/ports';
import { interruptibleSleep, processAndDelete, Signal } from './handle';
import { type Listener, LISTENER_MAX_RUN_MS, type ListenerDeps } from './listener';

const CLASSIC_POLL_MS = 1_000;
const CLASSIC_BATCH = 32;
const VISIBILITY_SECONDS = 60;

export function startClassicPoller(deps: ListenerDeps): Listener {
  const stopping = new Signal();
  let received: { ids: string[]; since: number } | undefined;
  const run = async (): Promise<void> => {
    const started = Date.now();
    // The loop's phase after a long idle is uniform within one poll period.
    if (deps.idleMs !== undefined) await interruptibleSleep(deps.random() * CLASSIC_POLL_MS, stopping.fired);
    while (!stopping.done && Date.now() - started < LISTENER_MAX_RUN_MS) {
      let messages: QueueMessage[];
      try {
        messages = await deps.queue.receive(CLASSIC_BATCH, VISIBILITY_SECONDS);
      } catch (e) {
        deps.log.warn(`${deps.queue.name}: receive failed: ${ensureError(e).message}`);
        messages = [];
      }
      if (messages.length === 0) {
        await interruptibleSleep(CLASSIC_POLL_MS, stopping.fired);
        continue;
      }
      received = { ids: messages.map((m) => m.id), since: Date.now() };
      await Promise.all(
        messages.map((m) =>
          processAndDelete(deps.queue, deps.processor, m, deps.log, { maxDequeueCount: deps.maxDequeueCount }),
        ),
      );
      received = undefined;
    }
  };
  const loop = run();
  return {
    stop: async () => {
      stopping.fire();
      await loop;
    },
    notify: () => {}, // a fixed-interval poller has nothing to shorten
    // The whole receive is settled together: each of its messages counts until the last is.
    inFlight: () => (received ? received.ids.map((id) => ({ id, ms: Date.now() - (received?.since ?? 0) })) : []),
  };
}
