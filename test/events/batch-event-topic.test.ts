/**
 * The `batch-events` topic copy on real parts (Azurite, the development broker, a subscriber
 * through the official SDK): sent right after the terminal write with no manifest write of its
 * own, the batch kept in the open-batch index until the topic has the event, and, when the
 * process that owed it could not send it, sent by recovery with the id and bytes the terminal
 * write stored (not before the grace, unless start-up says the process is gone).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import type { ServiceBusReceivedMessage } from '@azure/service-bus';

import type { Manifest } from '../../shared/batch/manifest';
import { OpenBatches } from '../../shared/batch/open-batches';
import type { OutgoingMessage } from '../../shared/bus/outgoing-message';
import { BATCH_EVENTS_TOPIC, TOPIC } from '../../shared/names';
import { ServiceBusPublisher } from '../../shared/notify/service-bus-publisher';
import { StorageMeter } from '../../shared/storage/meter';
import { provisionStorage } from '../../tools/devstack/provision-storage';
import { withAuditSubscription } from '../support/audit-subscription';
import { type BrokerHarness, receiveExactly, startTestBroker } from '../support/broker';
import { composedApp } from '../support/composed-app';
import { quietLog, testSettings, useStorage } from '../support/storage';

useStorage();

let bus: BrokerHarness;

before(async () => {
  bus = await startTestBroker(withAuditSubscription());
});

after(async () => {
  await bus?.close();
});

/** A batch whose only chunk failed: settled, and finalized without a report. */
function settledBatch(batchId: string): Manifest {
  const at = new Date().toISOString();
  return {
    v: 1,
    batchId,
    state: 'accepted',
    source: 'http',
    bodySha256: 'x',
    submittedAt: at,
    acceptedAt: at,
    progressAt: at,
    transactions: 1,
    chunkSize: 1,
    chunks: 1,
    queues: [],
    notification: 'sent',
    done: [],
    failed: [{ chunk: 0, reason: 'chunk blob checksum mismatch' }],
  };
}

/** The real publisher, whose topic sends can be made to fail (Service Bus down for that entity). */
function publisher(): ServiceBusPublisher & { topicDown: boolean } {
  const real = new ServiceBusPublisher(bus.client(), TOPIC);
  const send = real.send.bind(real);
  return Object.assign(real, {
    topicDown: false,
    send(this: { topicDown: boolean }, entity: string, messages: readonly OutgoingMessage[]) {
      return this.topicDown && entity === BATCH_EVENTS_TOPIC
        ? Promise.reject(new Error('injected: batch-events unavailable'))
        : send(entity, messages);
    },
  });
}

async function receivedFor(batchId: string, count: number): Promise<ServiceBusReceivedMessage[]> {
  const receiver = bus.client().createReceiver(BATCH_EVENTS_TOPIC, 'audit');
  try {
    const got = await receiveExactly(receiver, count, 10_000);
    for (const m of got) await receiver.completeMessage(m);
    return got.filter((m) => m.applicationProperties?.['cloudEvents:subject'] === batchId);
  } finally {
    await receiver.close();
  }
}

describe('the batch-events topic copy', () => {
  test('sent after the terminal write, which is the only manifest write; the marker goes once the topic has it', async () => {
    const settings = testSettings({ ServiceBusConnection: bus.broker.connectionString });
    const meter = new StorageMeter();
    const { app, parts } = composedApp(settings, { publisher: publisher(), log: quietLog, meter });
    try {
      await provisionStorage(settings);
      const m = settledBatch('b-topic-sent');
      await parts.manifests.create(m);
      await new OpenBatches(parts.blobs).add(m.batchId);
      const before = meter.snapshot();
      await parts.finalizer.ifSettled(m);
      await parts.events.idle();
      const after = meter.snapshot();
      const written = (op: string): number => (after[op] ?? 0) - (before[op] ?? 0);
      assert.equal(written('blob.put'), 1, 'the terminal write, and no record of the topic send');
      assert.equal(written('blob.delete'), 1, 'the open marker');
      const stored = (await parts.manifests.read(m.batchId))?.manifest;
      assert.equal(stored?.state, 'failed');
      const event = stored?.events?.[0];
      assert.ok(event);
      assert.equal(event.topic, BATCH_EVENTS_TOPIC);
      assert.deepEqual(event.deliveries, [], 'the topic is not a delivery');
      assert.deepEqual(await new OpenBatches(parts.blobs).list(100), [], 'the batch left the open index');
      const [msg] = await receivedFor(m.batchId, 1);
      assert.ok(msg, 'the subscriber got the event');
      assert.equal(msg.messageId, event.id);
      assert.equal(msg.applicationProperties?.['cloudEvents:type'], 'com.pushdrain.batch.failed');
    } finally {
      await app.close();
    }
  });

  test('a copy its process could not send keeps the marker; recovery sends it, with the stored id, once it counts as lost', async () => {
    const settings = testSettings({ ServiceBusConnection: bus.broker.connectionString });
    const down = publisher();
    down.topicDown = true;
    const first = composedApp(settings, { publisher: down, log: quietLog });
    const second = composedApp(settings, { publisher: publisher(), log: quietLog });
    try {
      await provisionStorage(settings);
      const m = settledBatch('b-topic-owed');
      await first.parts.manifests.create(m);
      await new OpenBatches(first.parts.blobs).add(m.batchId);
      await first.parts.finalizer.ifSettled(m);
      await first.parts.events.idle();
      assert.deepEqual(
        await new OpenBatches(first.parts.blobs).list(100),
        [m.batchId],
        'the marker stays while the copy is owed',
      );
      const stored = (await second.parts.manifests.read(m.batchId))?.manifest;
      const id = stored?.events?.[0]?.id;
      assert.ok(id);

      // A sweep inside the grace leaves it to the process that owes it.
      const early = await second.app.recover();
      await second.parts.events.idle();
      assert.deepEqual(
        early.actions.filter((a) => a.batchId === m.batchId),
        [{ batchId: m.batchId, kind: 'delivering', started: 0 }],
      );
      assert.deepEqual(await new OpenBatches(second.parts.blobs).list(100), [m.batchId]);

      // Start-up after that process died: the copy is sent now, and the batch leaves the index.
      const late = await second.app.recover({ leftBefore: Date.now() });
      await second.parts.events.idle();
      assert.deepEqual(
        late.actions.filter((a) => a.batchId === m.batchId),
        [{ batchId: m.batchId, kind: 'delivering', started: 1 }],
      );
      assert.deepEqual(await new OpenBatches(second.parts.blobs).list(100), []);
      const got = await receivedFor(m.batchId, 1);
      assert.deepEqual(
        got.map((g) => g.messageId),
        [id],
        'one copy, with the id the terminal write stored',
      );
    } finally {
      await first.app.close();
      await second.app.close();
    }
  });
});
