/**
 * The StorageMeter against the wire: the app composed as deployed, its Storage traffic through
 * a counting proxy in front of Azurite (an independent count of every request, classified by
 * the same names), from start-up (provisioning, recovery) through a batch to its report, the
 * status read a client makes, and a drain that finds nothing. Azure bills every request the
 * proxy sees; the meter must have counted each one, operation by operation. Then the same for the
 * local host as `npm start` runs it (its own clients, timers and every trigger): what its Storage
 * traffic costs at the wire is what its two meters say (the app's, and the status report's own).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';

import { defaultTuning, loadSettings } from '../../shared/config/settings';
import { CONTAINERS, entityNames } from '../../shared/names';
import { meterDelta, type MeterSnapshot, StorageMeter } from '../../shared/storage/meter';
import { type CountingProxy, startCountingProxy } from '../../tools/bench/support/counting-proxy';
import { provisionStorage } from '../../tools/devstack/provision-storage';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { startTestBroker } from '../support/broker';
import { CapturingPublisher } from '../support/capturing-publisher';
import { composedApp } from '../support/composed-app';
import { type HostProcess, startHostProcess } from '../support/host-process';
import { completed, post, pump, report, status } from '../support/invoke';
import { LOCAL_KEY, type LocalStack, statusOf, waitQuiet } from '../support/local-stack';
import { quietLog, storageUp, uniquePrefix, useStorage } from '../support/storage';

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
    const direct = loadSettings({ StorageConnection: azurite.connectionString, ...env });
    const { app: observer } = composedApp(direct, { publisher: new CapturingPublisher(), log: quietLog });
    try {
      await provisionStorage(direct);
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

describe('the local host (npm start) against the wire', () => {
  test("a batch through HTTP, status and report reads: the wire equals the app meter plus the status meter, plus npm start's provisioning", async () => {
    const azurite = await storageUp();
    const wire = await startCountingProxy({ blobPort: azurite.blobPort, queuePort: azurite.queuePort });
    const bus = await startTestBroker();
    let host: HostProcess | undefined;
    try {
      host = await startHostProcess({
        StorageConnection: wire.connectionString,
        ServiceBusConnection: bus.broker.connectionString,
        PUSHDRAIN_NAME_PREFIX: uniquePrefix(),
        PUSHDRAIN_SWEEP_SCHEDULE: '0 0 0 1 1 *',
      });
      const headers = { 'x-functions-key': LOCAL_KEY };
      const txns = generate(1_000, 41, 50);
      const posted = await fetch(`${host.base}/api/batches`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/x-ndjson' },
        body: toNdjson(txns),
      });
      assert.equal(posted.status, 202);
      const { batchId } = (await posted.json()) as { batchId: string };
      // Bounded: 300 reads 100 ms apart.
      let state = '';
      for (let i = 0; i < 300 && state !== 'completed'; i++) {
        const s = await fetch(`${host.base}/api/batches/${batchId}`, { headers });
        state = ((await s.json()) as { status: string }).status;
        if (state !== 'completed') await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(state, 'completed');
      const rep = await fetch(`${host.base}/api/batches/${batchId}/report`, { headers });
      assert.deepEqual(((await rep.json()) as { rows: unknown }).rows, expectedReport(txns).rows);
      const stack = { host } as LocalStack;
      await waitQuiet(stack);
      // The scaling agent may still be finishing its evaluation: compare once nothing moves (bounded).
      // npm start's own provisioning step (one create per queue and container) is the local
      // stack's, before the app serves; the app itself creates nothing.
      const queues = entityNames('', defaultTuning().partitions).allQueues().length;
      const provisioning = {
        'queue.create': queues,
        'container.create': CONTAINERS.length,
        total: queues + CONTAINERS.length,
      };
      let seen: { wire: MeterSnapshot; meters: MeterSnapshot } | undefined;
      for (let i = 0; i < 40; i++) {
        const { storage } = await statusOf(stack);
        const meters = sumSnapshots(storage.byOperation, storage.statusRequests, provisioning);
        seen = { wire: wire.snapshot(), meters };
        if (isDeepStrictEqual(seen.wire, seen.meters)) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      assert.ok((seen?.wire.total ?? 0) > 0, 'the proxy saw the host');
      assert.deepEqual(seen?.meters, seen?.wire, 'every request of the host is metered, by operation');
    } finally {
      await host?.stop();
      await bus.close();
      await wire.close();
    }
  });
});

function sumSnapshots(...snaps: MeterSnapshot[]): MeterSnapshot {
  const out: MeterSnapshot = {};
  for (const s of snaps) for (const [k, v] of Object.entries(s)) out[k] = (out[k] ?? 0) + v;
  return out;
}
