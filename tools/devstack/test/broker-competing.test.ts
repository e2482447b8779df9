/**
 * Competing consumers on the development broker: every message reaches exactly one receiver,
 * and one link can settle more messages than rhea's 2048-delivery session buffer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import type { ServiceBusSender } from '@azure/service-bus';

import { type BrokerHarness, queue, receiveExactly, startTestBroker } from '../../../test/support/broker';
import { waitFor } from '../../../test/support/poll';

async function sendNumbered(sender: ServiceBusSender, count: number): Promise<void> {
  let batch = await sender.createMessageBatch();
  for (let n = 0; n < count; n++) {
    const msg = { body: n, messageId: `m-${n}` };
    if (!batch.tryAddMessage(msg)) {
      await sender.sendMessages(batch);
      batch = await sender.createMessageBatch();
      assert.ok(batch.tryAddMessage(msg));
    }
  }
  if (batch.count > 0) await sender.sendMessages(batch);
}

describe('development broker: competing consumers', () => {
  let h: BrokerHarness;

  before(async () => {
    h = await startTestBroker({ entities: { queues: [queue('shared'), queue('many')] } });
  });

  after(async () => {
    await h.close();
  });

  test('200 messages over 3 streaming receivers: each received exactly once', async () => {
    const perReceiver: string[][] = [[], [], []];
    const errors: Error[] = [];
    const flowsBefore = h.broker.stats().flow;
    const subs = perReceiver.map((seen) =>
      h
        .client()
        .createReceiver('shared')
        .subscribe(
          {
            processMessage: async (m) => {
              seen.push(String(m.messageId));
              await new Promise((r) => setTimeout(r, 1));
            },
            processError: async (args) => {
              errors.push(args.error);
              return Promise.resolve();
            },
          },
          { maxConcurrentCalls: 5 },
        ),
    );
    assert.ok(await waitFor(() => h.broker.stats().flow - flowsBefore >= 3), 'all three receivers granted credit');
    await sendNumbered(h.client().createSender('shared'), 200);
    const total = (): number => perReceiver.reduce((n, s) => n + s.length, 0);
    assert.ok(await waitFor(() => total() >= 200, 10_000), `received ${total()} of 200`);
    await new Promise((r) => setTimeout(r, 200)); // room for a duplicate to show up
    await Promise.all(subs.map((s) => s.close()));
    const all = perReceiver.flat();
    assert.equal(all.length, 200, 'no duplicates');
    assert.equal(new Set(all).size, 200, 'no losses');
    for (const [i, seen] of perReceiver.entries()) assert.ok(seen.length > 0, `receiver ${i} took part`);
    assert.deepEqual(errors, []);
  });

  test('one receiver link settles more than 2048 messages', async () => {
    const count = 2100;
    await sendNumbered(h.client().createSender('many'), count);
    const receiver = h.client().createReceiver('many');
    const seen = new Set<string>();
    const deadline = Date.now() + 20_000;
    while (seen.size < count && Date.now() < deadline) {
      const got = await receiveExactly(receiver, Math.min(500, count - seen.size), 3000);
      if (got.length === 0) break;
      await Promise.all(got.map((m) => receiver.completeMessage(m)));
      for (const m of got) seen.add(String(m.messageId));
    }
    assert.equal(seen.size, count);
    assert.equal((await receiver.peekMessages(1)).length, 0);
  });
});
