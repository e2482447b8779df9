/**
 * The StorageMeter against the wire: the app composed as deployed, its Storage traffic through
 * a counting proxy in front of Azurite (an independent count of every request, classified by
 * the same names), from start-up (provisioning, recovery) through a batch to its report, the
 * status read a client makes, and a drain that finds nothing. Azure bills every request the
 * proxy sees; the meter must have counted each one, operation by operation.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { loadSettings } from '../shared/config/settings';
import { meterDelta, StorageMeter } from '../shared/storage/meter';
import { type CountingProxy, startCountingProxy } from '../tools/bench/support/counting-proxy';
import { generate, toNdjson } from '../tools/testkit/generate';
import { expectedReport } from '../tools/testkit/oracle';
import { CapturingPublisher } from './support/capturing-publisher';
import { composedApp } from './support/composed-app';
import { completed, post, pump, report, status } from './support/invoke';
import { quietLog, storageUp, uniquePrefix, useStorage } from './support/storage';

useStorage();

let proxy: CountingProxy | undefined;
before(async () => {
  const azurite = await storageUp();
  proxy = await startCountingProxy({ blobPort: azurite.blobPort, queuePort: azurite.queuePort });
});
after(async () => {
  await proxy?.close();
});

describe('storage meter against the wire', () => {
  test('start-up, a batch to its report, a status read and an empty drain: the meter equals the wire count', async () => {
    const azurite = await storageUp();
    const wire = proxy!;
    const prefix = uniquePrefix();
    const env = { PUSHDRAIN_NAME_PREFIX: prefix, PUSHDRAIN_MIN_IDLE_MS: '10', PUSHDRAIN_MAX_IDLE_MS: '200' };
    const meter = new StorageMeter();
    const events = new CapturingPublisher();
    const wire0 = wire.snapshot();
    const { app, parts } = composedApp(loadSettings({ StorageConnection: wire.connectionString, ...env }), {
      publisher: events,
      log: quietLog,
      meter,
    });
    // The test's own reads go straight to Azurite: they are not the app's.
    const { app: observer } = composedApp(loadSettings({ StorageConnection: azurite.connectionString, ...env }), {
      publisher: new CapturingPublisher(),
      log: quietLog,
    });
    try {
      await app.ready();
      const txns = generate(5_000, 40, 200);
      const res = await post(app, toNdjson(txns));
      assert.equal(res.status, 202, JSON.stringify(res.jsonBody));
      const { batchId } = res.jsonBody as { batchId: string };
      await pump(app, events, () => completed(observer, batchId), 60_000);
      // A client's status read and report read are the app's requests too.
      assert.equal((await status(app, batchId)).status, 200);
      const rep = await report(app, batchId);
      assert.equal(rep.status, 200);
      assert.deepEqual((rep.jsonBody as { rows: unknown }).rows, expectedReport(txns).rows);
      // A wake-up with nothing left: a drain that finds the queue empty and gives its slot back.
      events.all.length = 0;
      await events.publish([
        { storageAccount: 'devstoreaccount1', queueName: parts.names.resultsQueue, payloadSize: 0, role: 'output' },
      ]);
      await pump(app, events, () => Promise.resolve(app.drainsInProgress === 0), 30_000);
    } finally {
      await app.close();
      await observer.close();
    }
    const atWire = meterDelta(wire.snapshot(), wire0);
    const metered = meter.snapshot();
    assert.ok((atWire.total ?? 0) > 0, 'the proxy saw the app');
    assert.deepEqual(metered, atWire, 'the meter counts every request the wire carries, by operation');
  });
});
