/**
 * What a baseline's listeners hold when a batch stalls: the Functions trigger port and the classic
 * poller name each message received and not yet settled, with how long ago it was received, so a
 * stalled batch's line tells a hung invocation from a pointer no listener holds. Real Azurite.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { MessageProcessor, QueueMessage } from '../../../shared/ports';
import { until } from '../../../test/support/poll';
import { quietLog, testRuntime, useStorage } from '../../../test/support/storage';
import { startClassicPoller } from '../baselines/classic-poller';
import { startFunctionsQueueListener } from '../baselines/functions-queue-trigger';
import type { Listener, ListenerDeps } from '../baselines/listener';

useStorage();

/** A processor that holds every message until released. */
function held(): { processor: MessageProcessor; taken: QueueMessage[]; release: () => void } {
  let release = (): void => {};
  const gate = new Promise<void>((r) => (release = r));
  const taken: QueueMessage[] = [];
  return {
    processor: {
      process: async (m) => {
        taken.push(m);
        await gate;
      },
    },
    taken,
    release: () => release(),
  };
}

for (const [name, start] of [
  ['the Functions queue trigger port', startFunctionsQueueListener],
  ['the classic poller', startClassicPoller],
] as const) {
  describe(`${name}: messages in flight`, () => {
    test('names the message it holds until it is settled, then none', async () => {
      const rt = await testRuntime();
      const queueName = rt.parts.names.inputQueues()[0] as string;
      const gate = held();
      const deps: ListenerDeps = {
        queue: rt.parts.queues.queue(queueName),
        processor: gate.processor,
        log: quietLog,
        maxDequeueCount: 5,
        random: () => 0.5,
      };
      const listener: Listener = start(deps);
      try {
        assert.deepEqual(listener.inFlight(), []);
        await rt.parts.queues.send(queueName, { n: 1 });
        const [m] = await until('the message taken', 20_000, () => (gate.taken.length > 0 ? gate.taken : undefined));
        const holding = listener.inFlight();
        assert.deepEqual(
          holding.map((h) => h.id),
          [m?.id],
        );
        assert.ok(holding.every((h) => h.ms >= 0));
        gate.release();
        await until('the message settled', 20_000, async () =>
          listener.inFlight().length === 0 && (await rt.parts.queues.depth(queueName)) === 0 ? true : undefined,
        );
      } finally {
        gate.release();
        await listener.stop();
      }
    });
  });
}
