/**
 * The development broker's drop switch, observed through the real SDK: sends and schedules
 * are acknowledged as successful, yet nothing is stored or delivered, for one entity or all.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';

import { type BrokerHarness, queue, receiveExactly, startTestBroker } from '../../../test/support/broker';
import type { EntitiesConfig } from '../servicebus/config';

const ENTITIES: EntitiesConfig = {
  queues: [queue('lost'), queue('kept'), queue('early')],
  topics: [
    { name: 'events', subscriptions: [{ name: 'all', filter: null, lockDuration: 'PT5S', maxDeliveryCount: 10 }] },
  ],
};

/** Nothing is receivable from a queue or a subscription: a short wait, then an empty peek as well. */
async function empty(h: BrokerHarness, entity: string, subscription?: string): Promise<void> {
  const name = subscription === undefined ? entity : `${entity}/${subscription}`;
  const receiver =
    subscription === undefined ? h.client().createReceiver(entity) : h.client().createReceiver(entity, subscription);
  assert.deepEqual(await receiver.receiveMessages(5, { maxWaitTimeInMs: 300 }), [], `${name} received nothing`);
  assert.equal((await receiver.peekMessages(5)).length, 0, `${name} holds nothing`);
  await receiver.close();
}

describe('development broker: the drop switch', () => {
  let h: BrokerHarness;

  before(async () => {
    h = await startTestBroker({ entities: ENTITIES });
  });

  afterEach(async () => {
    h.broker.faults.reset();
    await h.closeClients();
  });

  after(async () => {
    await h.close();
  });

  test('every entity: sends, batches and schedules succeed, nothing is stored or delivered; reset ends it', async () => {
    const client = h.client({ maxRetries: 0 });
    h.broker.faults.dropSends();
    const before = h.broker.stats();
    await client.createSender('lost').sendMessages({ body: 'single' });
    await client.createSender('lost').sendMessages([{ body: 'a' }, { body: 'b' }]);
    await client.createSender('events').sendMessages({ body: 'event', applicationProperties: { role: 'input' } });
    const at = new Date(Date.now() + 200);
    const seqs = await client.createSender('lost').scheduleMessages([{ body: 'check 1' }, { body: 'check 2' }], at);
    await client.createSender('lost').sendMessages({ body: 'scheduled by field', scheduledEnqueueTimeUtc: at });
    assert.equal(seqs.length, 2, 'the schedule was answered with sequence numbers');
    assert.ok(
      seqs.every((s) => s.toNumber() > 0) && seqs[0]!.toNumber() !== seqs[1]!.toNumber(),
      'distinct sequence numbers',
    );
    await new Promise((r) => setTimeout(r, 400)); // past the scheduled time: nothing fires either
    await empty(h, 'lost');
    await empty(h, 'events', 'all');
    assert.equal(h.broker.stats().dropped - before.dropped, 7, 'every message was counted as dropped');

    h.broker.faults.reset();
    await client.createSender('lost').sendMessages({ body: 'after reset' });
    const got = await receiveExactly(h.client().createReceiver('lost', { receiveMode: 'receiveAndDelete' }), 1);
    assert.deepEqual(
      got.map((m) => m.body as string),
      ['after reset'],
    );
    assert.ok(
      got[0]!.sequenceNumber!.toNumber() > seqs[1]!.toNumber(),
      'numbering continues past the dropped messages',
    );
  });

  test('one entity: only its sends are dropped; a topic drops for every subscription', async () => {
    const client = h.client();
    h.broker.faults.dropSends('events');
    await client.createSender('events').sendMessages({ body: 'gone' });
    await client.createSender('kept').sendMessages({ body: 'stored' });
    await client.createSender('kept').scheduleMessages({ body: 'scheduled' }, new Date(Date.now() + 100));
    await empty(h, 'events', 'all');
    const got = await receiveExactly(client.createReceiver('kept', { receiveMode: 'receiveAndDelete' }), 2);
    assert.deepEqual(got.map((m) => m.body as string).sort(), ['scheduled', 'stored']);
  });

  test('a message scheduled before the switch is still delivered at its time', async () => {
    const client = h.client();
    await client.createSender('early').scheduleMessages({ body: 'before the fault' }, new Date(Date.now() + 300));
    h.broker.faults.dropSends('early');
    const got = await receiveExactly(client.createReceiver('early', { receiveMode: 'receiveAndDelete' }), 1);
    assert.deepEqual(
      got.map((m) => m.body as string),
      ['before the fault'],
    );
  });

  test('an unknown entity is refused with a clear error', () => {
    assert.throws(() => h.broker.faults.dropSends('no-such-queue'), /no queue or topic named "no-such-queue"/);
    assert.throws(
      () => h.broker.faults.dropSends('events/Subscriptions/all'),
      RangeError,
      'subscriptions receive; only queues and topics are sent to',
    );
  });
});

describe('development broker: the drop switch with a journal', () => {
  test('numbering stays past the dropped messages across a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pd-drop-'));
    try {
      const first = await startTestBroker({ entities: ENTITIES, dataDir: dir, notice: () => undefined });
      first.broker.faults.dropSends();
      const [dropped] = await first
        .client()
        .createSender('lost')
        .scheduleMessages({ body: 'x' }, new Date(Date.now() + 60_000));
      await first.close();
      const second = await startTestBroker({ entities: ENTITIES, dataDir: dir, notice: () => undefined });
      try {
        await second.client().createSender('lost').sendMessages({ body: 'after restart' });
        const got = await receiveExactly(
          second.client().createReceiver('lost', { receiveMode: 'receiveAndDelete' }),
          1,
        );
        assert.deepEqual(
          got.map((m) => m.body as string),
          ['after restart'],
          'the dropped schedule was not journaled as a message',
        );
        assert.ok(got[0]!.sequenceNumber!.toNumber() > dropped!.toNumber());
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
