/**
 * `$management` operations and time-based behaviour on the development broker: scheduled
 * messages, peek, deferral, and message time-to-live.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { isServiceBusError } from '@azure/service-bus';

import { type BrokerHarness, queue, receiveExactly, startTestBroker } from '../../../test/support/broker';
import { waitFor } from '../../../test/support/poll';

describe('development broker: management operations', () => {
  let h: BrokerHarness;

  before(async () => {
    h = await startTestBroker({
      entities: {
        queues: [
          queue('schedule'),
          queue('cancel'),
          queue('peek'),
          queue('defer'),
          queue('ttl-drop'),
          queue('ttl-dlq', { deadLetteringOnMessageExpiration: true }),
          queue('ttl-default', { defaultMessageTimeToLive: 'PT0.3S' }),
        ],
      },
    });
  });

  after(async () => {
    await h.close();
  });

  test('scheduled messages are enqueued at their time, by scheduleMessages or by the message field', async () => {
    const client = h.client();
    const sender = client.createSender('schedule');
    const at = new Date(Date.now() + 800);
    const [seq] = await sender.scheduleMessages({ body: 'later' }, at);
    assert.ok(seq && seq.toNumber() > 0);
    await sender.sendMessages({ body: 'also later', scheduledEnqueueTimeUtc: at });
    const receiver = client.createReceiver('schedule', { receiveMode: 'receiveAndDelete' });
    const got = await receiveExactly(receiver, 2, 4000);
    assert.ok(Date.now() >= at.getTime() - 20, 'not received before the scheduled time');
    assert.deepEqual(got.map((m) => m.body as string).sort(), ['also later', 'later']);
    for (const m of got) {
      assert.ok(m.enqueuedTimeUtc!.getTime() >= at.getTime() - 20, 'enqueued at the scheduled time');
      assert.equal(m.scheduledEnqueueTimeUtc?.getTime(), at.getTime());
    }
    assert.equal(got.find((x) => x.body === 'later')?.sequenceNumber?.toNumber(), seq.toNumber());
  });

  test('a cancelled scheduled message never arrives', async () => {
    const client = h.client();
    const sender = client.createSender('cancel');
    const at = new Date(Date.now() + 1000);
    const [seq] = await sender.scheduleMessages({ body: 'never' }, at);
    await sender.scheduleMessages({ body: 'kept' }, at);
    await sender.cancelScheduledMessages(seq!);
    const got = await receiveExactly(client.createReceiver('cancel', { receiveMode: 'receiveAndDelete' }), 1, 3000);
    assert.deepEqual(
      got.map((m) => m.body as string),
      ['kept'],
    );
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await client.createReceiver('cancel').peekMessages(5)).length, 0);
  });

  test('peek pages through messages without locking them; an empty peek returns nothing', async () => {
    const client = h.client();
    await client.createSender('peek').sendMessages([{ body: 'p1' }, { body: 'p2' }, { body: 'p3' }]);
    const peeker = client.createReceiver('peek');
    const page1 = await peeker.peekMessages(2);
    assert.deepEqual(
      page1.map((m) => m.body as string),
      ['p1', 'p2'],
    );
    assert.deepEqual(
      (await peeker.peekMessages(2)).map((m) => m.body as string),
      ['p3'],
      'the SDK continues after the last peeked message',
    );
    assert.deepEqual(await peeker.peekMessages(2), [], '204 from the broker');
    const again = await peeker.peekMessages(10, { fromSequenceNumber: page1[0]!.sequenceNumber });
    assert.equal(again.length, 3, 'peek from an explicit sequence number');
    const got = await receiveExactly(client.createReceiver('peek'), 3);
    assert.deepEqual(
      got.map((m) => m.deliveryCount),
      [0, 0, 0],
      'peek is not a delivery',
    );
    assert.ok(h.broker.stats()['management:peek-message']! >= 3);
  });

  test('deferred messages are received by sequence number and settled through $management', async () => {
    const client = h.client();
    await client.createSender('defer').sendMessages({ body: 'wait for it' });
    const receiver = client.createReceiver('defer');
    const [m] = await receiveExactly(receiver, 1);
    const seq = m!.sequenceNumber!;
    await receiver.deferMessage(m!);
    assert.equal((await receiver.receiveMessages(1, { maxWaitTimeInMs: 200 })).length, 0, 'deferred is not delivered');
    const [peeked] = await receiver.peekMessages(1, { fromSequenceNumber: seq });
    assert.equal(peeked?.state, 'deferred');
    const [d1] = await receiver.receiveDeferredMessages(seq);
    assert.equal(d1?.body, 'wait for it');
    assert.equal(d1?.state, 'deferred');
    await receiver.abandonMessage(d1);
    const [d2] = await receiver.receiveDeferredMessages(seq);
    assert.equal(d2?.deliveryCount, 1, 'abandon keeps it deferred and counts the delivery');
    await receiver.completeMessage(d2);
    await assert.rejects(
      receiver.receiveDeferredMessages(seq),
      (err) => isServiceBusError(err) && err.code === 'MessageNotFound',
    );
  });

  test('an expired message is dropped where the entity does not dead-letter on expiry', async () => {
    const client = h.client();
    const expiredBefore = h.broker.stats().expired;
    await client.createSender('ttl-drop').sendMessages({ body: 'stale', timeToLive: 150 });
    assert.ok(await waitFor(() => h.broker.stats().expired > expiredBefore, 2000), 'expired without a receiver');
    assert.equal((await client.createReceiver('ttl-drop').receiveMessages(1, { maxWaitTimeInMs: 200 })).length, 0);
    assert.equal((await client.createReceiver('ttl-drop', { subQueueType: 'deadLetter' }).peekMessages(1)).length, 0);
  });

  test('an expired message is dead-lettered where deadLetteringOnMessageExpiration is set', async () => {
    const client = h.client();
    await client.createSender('ttl-dlq').sendMessages({ body: 'stale', timeToLive: 150 });
    const [d] = await receiveExactly(client.createReceiver('ttl-dlq', { subQueueType: 'deadLetter' }), 1, 3000);
    assert.equal(d?.body, 'stale');
    assert.equal(d?.deadLetterReason, 'TTLExpiredException');
    assert.equal((await client.createReceiver('ttl-dlq').peekMessages(1)).length, 0);
  });

  test("the entity's defaultMessageTimeToLive caps a message without its own", async () => {
    const client = h.client();
    await client.createSender('ttl-default').sendMessages([{ body: 'short' }]);
    const [m] = await client.createReceiver('ttl-default').peekMessages(1);
    assert.ok(m?.expiresAtUtc && m.enqueuedTimeUtc);
    assert.equal(m.expiresAtUtc.getTime() - m.enqueuedTimeUtc.getTime(), 300);
    await new Promise((r) => setTimeout(r, 450));
    assert.equal((await client.createReceiver('ttl-default').receiveMessages(1, { maxWaitTimeInMs: 200 })).length, 0);
  });
});
