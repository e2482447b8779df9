/**
 * The development broker through the real @azure/service-bus SDK: send, receive, settle.
 * Each test uses its own queue.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import type { ServiceBusReceivedMessage } from '@azure/service-bus';

import { type BrokerHarness, queue, receiveExactly, startTestBroker } from '../../../test/support/broker';
import { waitFor } from '../../../test/support/poll';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('development broker: messaging', () => {
  let h: BrokerHarness;

  before(async () => {
    h = await startTestBroker({
      entities: {
        queues: [
          queue('single'),
          queue('batch'),
          queue('stream'),
          queue('abandon'),
          queue('dead'),
          queue('maxdc', { maxDeliveryCount: 3 }),
          queue('rad'),
          queue('idle'),
        ],
      },
    });
  });

  after(async () => {
    await h.close();
  });

  test('a single message arrives with Service Bus annotations and a broker-assigned id', async () => {
    const client = h.client();
    const before = Date.now();
    const completedBefore = h.broker.stats().complete;
    await client.createSender('single').sendMessages({ body: { n: 1 }, applicationProperties: { role: 'input' } });
    const receiver = client.createReceiver('single');
    const [m] = await receiveExactly(receiver, 1);
    assert.ok(m);
    assert.deepEqual(m.body, { n: 1 });
    assert.equal(m.applicationProperties?.role, 'input');
    assert.match(String(m.messageId), /^[0-9a-f]{32}$/);
    assert.equal(m.sequenceNumber?.toNumber(), 1);
    assert.equal(m.deliveryCount, 0);
    assert.match(m.lockToken ?? '', UUID);
    assert.ok(m.lockedUntilUtc && m.lockedUntilUtc.getTime() > Date.now(), 'locked until a future time');
    assert.ok(m.enqueuedTimeUtc && m.enqueuedTimeUtc.getTime() >= before - 5);
    await receiver.completeMessage(m);
    assert.equal((await receiver.receiveMessages(1, { maxWaitTimeInMs: 200 })).length, 0);
    assert.equal(h.broker.stats().complete - completedBefore, 1);
  });

  test('batches (array and createMessageBatch) arrive complete and in order', async () => {
    const sender = h.client().createSender('batch');
    await sender.sendMessages([0, 1, 2, 3, 4].map((n) => ({ body: n })));
    const batch = await sender.createMessageBatch();
    for (let n = 5; n < 10; n++) assert.ok(batch.tryAddMessage({ body: n, messageId: `m-${n}` }));
    await sender.sendMessages(batch);
    const receiver = h.client().createReceiver('batch', { receiveMode: 'receiveAndDelete' });
    const got = await receiveExactly(receiver, 10);
    assert.deepEqual(
      got.map((m) => m.body as number),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    );
    assert.equal(got[9]?.messageId, 'm-9');
    const seqs = got.map((m) => m.sequenceNumber!.toNumber());
    assert.ok(
      seqs.every((s, i) => i === 0 || s > seqs[i - 1]!),
      `increasing sequence numbers: ${seqs.join(',')}`,
    );
  });

  test('a streaming receiver (subscribe) gets every message and auto-completes it', async () => {
    const client = h.client();
    const completedBefore = h.broker.stats().complete;
    const seen: unknown[] = [];
    const errors: Error[] = [];
    const sub = client.createReceiver('stream').subscribe(
      {
        processMessage: async (m) => {
          seen.push(m.body);
          return Promise.resolve();
        },
        processError: async (args) => {
          errors.push(args.error);
          return Promise.resolve();
        },
      },
      { maxConcurrentCalls: 4 },
    );
    await client.createSender('stream').sendMessages(Array.from({ length: 20 }, (_, n) => ({ body: n })));
    assert.ok(await waitFor(() => seen.length >= 20), `received ${seen.length} of 20`);
    assert.ok(await waitFor(() => h.broker.stats().complete - completedBefore >= 20), 'all 20 completed');
    await sub.close();
    assert.deepEqual(
      [...seen].sort((a, b) => Number(a) - Number(b)),
      Array.from({ length: 20 }, (_, n) => n),
    );
    assert.deepEqual(errors, []);
    assert.equal((await client.createReceiver('stream').peekMessages(5)).length, 0);
  });

  test('abandon redelivers with a rising delivery count', async () => {
    const client = h.client();
    await client.createSender('abandon').sendMessages({ body: 'again' });
    const receiver = client.createReceiver('abandon');
    const counts: number[] = [];
    let last: ServiceBusReceivedMessage | undefined;
    for (let i = 0; i < 3; i++) {
      [last] = await receiveExactly(receiver, 1);
      assert.ok(last, `delivery ${i + 1}`);
      counts.push(last.deliveryCount ?? -1);
      if (i < 2) await receiver.abandonMessage(last);
    }
    assert.deepEqual(counts, [0, 1, 2]);
    await receiver.completeMessage(last!);
  });

  test('dead-lettering shows the reason and description on the DLQ message', async () => {
    const client = h.client();
    await client.createSender('dead').sendMessages({ body: 'poison', messageId: 'p-1' });
    const receiver = client.createReceiver('dead');
    const [m] = await receiveExactly(receiver, 1);
    await receiver.deadLetterMessage(m!, {
      deadLetterReason: 'Unparseable',
      deadLetterErrorDescription: 'bad json at 3',
    });
    const dlq = client.createReceiver('dead', { subQueueType: 'deadLetter' });
    const [d] = await receiveExactly(dlq, 1);
    assert.ok(d);
    assert.equal(d.messageId, 'p-1');
    assert.equal(d.deadLetterReason, 'Unparseable');
    assert.equal(d.deadLetterErrorDescription, 'bad json at 3');
    assert.equal(d.deadLetterSource, 'dead');
    await dlq.completeMessage(d);
    assert.equal((await receiver.peekMessages(1)).length, 0);
  });

  test('maxDeliveryCount moves the message to the DLQ with MaxDeliveryCountExceeded', async () => {
    const client = h.client();
    await client.createSender('maxdc').sendMessages({ body: 'flaky' });
    const receiver = client.createReceiver('maxdc');
    for (let i = 0; i < 3; i++) {
      const [m] = await receiveExactly(receiver, 1);
      assert.ok(m, `delivery ${i + 1} of 3`);
      await receiver.abandonMessage(m);
    }
    assert.equal((await receiver.receiveMessages(1, { maxWaitTimeInMs: 200 })).length, 0);
    const [d] = await receiveExactly(client.createReceiver('maxdc', { subQueueType: 'deadLetter' }), 1);
    assert.equal(d?.body, 'flaky');
    assert.equal(d?.deadLetterReason, 'MaxDeliveryCountExceeded');
  });

  test('receiveAndDelete removes messages on delivery', async () => {
    const client = h.client();
    await client.createSender('rad').sendMessages([{ body: 'a' }, { body: 'b' }, { body: 'c' }]);
    const got = await receiveExactly(client.createReceiver('rad', { receiveMode: 'receiveAndDelete' }), 3);
    assert.deepEqual(
      got.map((m) => m.body as string),
      ['a', 'b', 'c'],
    );
    assert.equal(got[0]?.lockToken, undefined);
    assert.equal((await client.createReceiver('rad').peekMessages(3)).length, 0);
  });

  test('an empty receive is drained promptly, so the SDK keeps its link', async () => {
    const receiver = h.client().createReceiver('idle');
    assert.equal((await receiver.receiveMessages(5, { maxWaitTimeInMs: 100 })).length, 0);
    const s1 = h.broker.stats();
    assert.equal((await receiver.receiveMessages(5, { maxWaitTimeInMs: 100 })).length, 0);
    const s2 = h.broker.stats();
    assert.equal(s2.drain - s1.drain, 1, 'one drain per empty receive');
    // An unanswered drain makes the SDK close its link and attach a new one next time.
    assert.equal(s2.attach, s1.attach, 'no re-attach');
  });
});
