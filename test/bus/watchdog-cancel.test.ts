/**
 * Nothing fires for a batch that is done: against real Azurite and the real broker over AMQP,
 * with the app's own Service Bus publisher. Acceptance schedules the batch's watchdog check on
 * `batch-watchdog` and records its sequence number in the manifest; once the batch completes the
 * finalizer cancels it, so nothing is left scheduled or pending that would wake an instance.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { ServiceBusReceiver } from '@azure/service-bus';

import type { PushdrainApp } from '../../shared/app';
import { parseWorkDetected } from '../../shared/bus/work-detected';
import { SUBSCRIPTIONS, TOPIC, WATCHDOG_QUEUE } from '../../shared/names';
import { provisionStorage } from '../../tools/devstack/provision-storage';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { useBroker } from '../support/broker';
import { composedApp } from '../support/composed-app';
import { completed, post } from '../support/invoke';
import { quietLog, testSettings, useStorage } from '../support/storage';

useStorage();

const bus = useBroker();

const scheduledChecks = (): number => bus.broker.scheduledCount(WATCHDOG_QUEUE) ?? 0;
const pendingChecks = (): number => {
  const c = bus.broker.counts(WATCHDOG_QUEUE);
  return c ? c.available + c.locked : 0;
};

/** Delivers the WorkDetected events of both subscriptions to the app until the batch is done (bounded). */
async function pumpUntilDone(app: PushdrainApp, receivers: ServiceBusReceiver[], batchId: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (let i = 0; i < 200 && Date.now() < deadline; i++) {
    if (await completed(app, batchId)) return;
    for (const r of receivers) {
      for (const m of await r.receiveMessages(10, { maxWaitTimeInMs: 200 })) {
        await r.completeMessage(m);
        const event = parseWorkDetected(m.body);
        if (typeof event === 'string') assert.fail(`not a WorkDetected event: ${event}`);
        await app.drain(event);
      }
    }
  }
  assert.fail(`batch ${batchId} did not complete within 60 s`);
}

describe('a finished batch leaves nothing scheduled', () => {
  test('the watchdog check scheduled at acceptance is cancelled when the batch completes', async () => {
    const settings = testSettings({
      ServiceBusConnection: bus.broker.connectionString,
      PUSHDRAIN_PARTITIONS: '1',
      PUSHDRAIN_CHUNK_SIZE: '100',
    });
    const { app, parts } = composedApp(settings, { log: quietLog });
    await provisionStorage(settings);
    const receivers = [SUBSCRIPTIONS.drain.name, SUBSCRIPTIONS.aggregate.name].map((s) =>
      bus.client().createReceiver(TOPIC, s),
    );
    try {
      const before = scheduledChecks();
      const res = await post(app, toNdjson(generate(300, 3601, 10)));
      assert.equal(res.status, 202);
      const { batchId } = res.jsonBody as { batchId: string };
      assert.equal(scheduledChecks(), before + 1, 'acceptance scheduled the first check');
      const m = (await parts.manifests.read(batchId))?.manifest;
      assert.equal(m?.watchdog?.length, 1, 'the manifest keeps the check’s sequence number');

      await pumpUntilDone(app, receivers, batchId);
      assert.equal((await app.status(batchId))?.status, 'completed');
      assert.equal(scheduledChecks(), before, 'the check was cancelled: nothing comes due for the finished batch');
      assert.equal(pendingChecks(), 0, 'and nothing is waiting on the watchdog queue');
    } finally {
      await Promise.all(receivers.map((r) => r.close()));
      await app.close();
    }
  });
});
