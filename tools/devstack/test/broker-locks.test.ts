/**
 * Message locks on the development broker: expiry and redelivery, renewal, and lock-lost
 * settlement. Queues use a 1 s lock; receivers turn the SDK's auto-renewal off, which would
 * otherwise keep renewing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { isServiceBusError } from '@azure/service-bus';

import { type BrokerHarness, queue, receiveExactly, startTestBroker } from '../../../test/support/broker';

const NO_AUTO_RENEW = { maxAutoLockRenewalDurationInMs: 0 };

describe('development broker: locks', () => {
  let h: BrokerHarness;

  before(async () => {
    h = await startTestBroker({
      entities: {
        queues: [
          queue('expiry', { lockDuration: 'PT1S' }),
          queue('renew', { lockDuration: 'PT1S' }),
          queue('lost', { lockDuration: 'PT1S' }),
          queue('expiry-dlq', { lockDuration: 'PT1S', maxDeliveryCount: 1 }),
        ],
      },
    });
  });

  after(async () => {
    await h.close();
  });

  test('an expired lock makes the message available again with a higher delivery count', async () => {
    const client = h.client();
    await client.createSender('expiry').sendMessages({ body: 'slow' });
    const receiver = client.createReceiver('expiry', NO_AUTO_RENEW);
    const [first] = await receiveExactly(receiver, 1);
    assert.equal(first?.deliveryCount, 0);
    const lockedAt = Date.now();
    const [second] = await receiveExactly(receiver, 1, 4000);
    assert.ok(second, 'redelivered after the lock expired');
    assert.ok(Date.now() - lockedAt >= 800, 'not before the 1 s lock ran out');
    assert.equal(second.body, 'slow');
    assert.equal(second.deliveryCount, 1);
    assert.notEqual(second.lockToken, first?.lockToken);
    await receiver.completeMessage(second);
    assert.equal(h.broker.stats().lockExpired >= 1, true);
  });

  test('renewLock extends the lock so the message is not redelivered', async () => {
    const client = h.client();
    await client.createSender('renew').sendMessages({ body: 'long job' });
    const receiver = client.createReceiver('renew', NO_AUTO_RENEW);
    const [m] = await receiveExactly(receiver, 1);
    assert.ok(m?.lockedUntilUtc);
    const firstUntil = m.lockedUntilUtc.getTime();
    const other = client.createReceiver('renew', NO_AUTO_RENEW);
    for (let i = 0; i < 4; i++) {
      await new Promise((r) => setTimeout(r, 400));
      const until = await receiver.renewMessageLock(m);
      assert.ok(until.getTime() > Date.now() + 500, `renewal ${i + 1} moves the expiry ahead`);
    }
    assert.ok(m.lockedUntilUtc.getTime() > firstUntil, 'the message object sees the new expiry');
    assert.equal(
      (await other.receiveMessages(1, { maxWaitTimeInMs: 300 })).length,
      0,
      'still locked after 1.6 s of a 1 s lock',
    );
    await receiver.completeMessage(m);
    assert.ok((h.broker.stats()['management:renew-lock'] ?? 0) >= 4);
  });

  test('settling after the lock expired fails with MessageLockLost', async () => {
    const client = h.client();
    await client.createSender('lost').sendMessages({ body: 'late' });
    const receiver = client.createReceiver('lost', NO_AUTO_RENEW);
    const [m] = await receiveExactly(receiver, 1);
    assert.ok(m);
    await new Promise((r) => setTimeout(r, 1300));
    await assert.rejects(
      receiver.completeMessage(m),
      (err) => isServiceBusError(err) && err.code === 'MessageLockLost',
    );
    await assert.rejects(
      receiver.renewMessageLock(m),
      (err) => isServiceBusError(err) && err.code === 'MessageLockLost',
    );
    const [again] = await receiveExactly(receiver, 1);
    assert.equal(again?.body, 'late');
    await receiver.completeMessage(again);
  });

  test('lock expiry counts toward maxDeliveryCount', async () => {
    const client = h.client();
    await client.createSender('expiry-dlq').sendMessages({ body: 'stuck' });
    const receiver = client.createReceiver('expiry-dlq', NO_AUTO_RENEW);
    assert.equal((await receiveExactly(receiver, 1)).length, 1);
    const dlq = client.createReceiver('expiry-dlq', { subQueueType: 'deadLetter' });
    const [d] = await receiveExactly(dlq, 1, 4000);
    assert.equal(d?.body, 'stuck');
    assert.equal(d?.deadLetterReason, 'MaxDeliveryCountExceeded');
    assert.equal((await receiver.receiveMessages(1, { maxWaitTimeInMs: 200 })).length, 0);
  });
});
