/**
 * Deployed mode: the queues and containers exist because infra/ made them (here, the local
 * provisioning step straight to Azurite stands in for it), and the app is built from settings as
 * in Azure, with default tuning, its Storage traffic counted at the wire. A fresh instance's first
 * batch creates nothing; a queue missing from the deployment is a 503, a log line naming it and
 * degraded health, and is still missing afterwards.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { health } from '../../functions/health-http';
import type { WorkDetected } from '../../shared/bus/work-detected';
import { loadSettings, type Settings } from '../../shared/config/settings';
import { entityNames } from '../../shared/names';
import type { HealthState } from '../../shared/status/process-health';
import { meterDelta } from '../../shared/storage/meter';
import { type CountingProxy, startCountingProxy } from '../../tools/bench/support/counting-proxy';
import { provisionStorage } from '../../tools/devstack/provision-storage';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { CapturingPublisher } from '../support/capturing-publisher';
import { composedApp } from '../support/composed-app';
import { completed, logs, post, pump, report } from '../support/invoke';
import { quietLog, rawStorage, storageUp, uniquePrefix, useStorage } from '../support/storage';

useStorage();

let wire: CountingProxy | undefined;
before(async () => {
  const azurite = await storageUp();
  wire = await startCountingProxy({ blobPort: azurite.blobPort, queuePort: azurite.queuePort });
});
after(async () => {
  await wire?.close();
});

/** Settings as deployed (default tuning), for the app through the wire and for the test straight to Azurite. */
async function deployment(): Promise<{ app: Settings; direct: Settings }> {
  const azurite = await storageUp();
  const env = { PUSHDRAIN_NAME_PREFIX: uniquePrefix() };
  return {
    app: loadSettings({ StorageConnection: wire!.connectionString, ...env }),
    direct: loadSettings({ StorageConnection: azurite.connectionString, ...env }),
  };
}

/** Requests that create a queue or a container, by operation (the meter's names). */
function creates(snapshot: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(snapshot).filter(([op]) => op === 'queue.create' || op === 'container.create'),
  );
}

describe('a cold instance in deployed mode', () => {
  test("a fresh ingesting instance and a fresh draining one: the first batch's report, and not one create at the wire", async () => {
    const settings = await deployment();
    await provisionStorage(settings.direct); // infra/'s part, not at the wire
    const events = new CapturingPublisher();
    const wire0 = wire!.snapshot();
    // Flex Consumption scales HTTP and the Service Bus triggers apart: two cold instances.
    const ingesting = composedApp(settings.app, { publisher: events, log: quietLog });
    const draining = composedApp(settings.app, { publisher: events, log: quietLog });
    const observer = composedApp(settings.direct, { publisher: new CapturingPublisher(), log: quietLog });
    try {
      const txns = generate(1_000, 48, 50);
      const res = await post(ingesting.app, toNdjson(txns));
      assert.equal(res.status, 202, JSON.stringify(res.jsonBody));
      const { batchId } = res.jsonBody as { batchId: string };
      await pump(draining.app, events, () => completed(observer.app, batchId), 60_000);
      const rep = await report(observer.app, batchId);
      assert.deepEqual((rep.jsonBody as { rows: unknown }).rows, expectedReport(txns).rows);
    } finally {
      await ingesting.app.close();
      await draining.app.close();
      await observer.app.close();
    }
    const atWire = meterDelta(wire!.snapshot(), wire0);
    assert.ok((atWire.total ?? 0) > 0, 'the proxy saw both instances');
    assert.deepEqual(creates(atWire), {}, `the wire: ${JSON.stringify(atWire)}`);
    assert.deepEqual(
      creates(ingesting.app.storageTransactions()),
      {},
      'nor does the meter of the ingesting instance count one',
    );
  });

  test("a fresh drain woken by the ingest's WorkDetected finds the accept on its first read and completes the batch itself", async () => {
    const settings = await deployment();
    await provisionStorage(settings.direct);
    // Each WorkDetected goes to a fresh draining instance the moment it is published, as a fresh
    // Service Bus-triggered instance takes it: the ingest writes its accept before that publish,
    // so the drain never meets the ingesting manifest and never waits for the accept.
    const drained: Promise<unknown>[] = [];
    const draining = composedApp(settings.app, { publisher: new CapturingPublisher(), log: quietLog });
    const publisher = new (class extends CapturingPublisher {
      override async publish(events: readonly WorkDetected[], delayMs: number): Promise<void> {
        for (const e of events) if (e.role === 'input') drained.push(draining.app.drain(e));
        return super.publish(events, delayMs);
      }
    })();
    const ingesting = composedApp(settings.app, { publisher, log: quietLog });
    const observer = composedApp(settings.direct, { publisher: new CapturingPublisher(), log: quietLog });
    try {
      const txns = generate(1_000, 52, 50);
      const res = await post(ingesting.app, toNdjson(txns));
      assert.equal(res.status, 202, JSON.stringify(res.jsonBody));
      await Promise.all(drained);
      const { batchId } = res.jsonBody as { batchId: string };
      assert.equal((await observer.app.status(batchId))?.status, 'completed');
      const rep = await report(observer.app, batchId);
      assert.deepEqual((rep.jsonBody as { rows: unknown }).rows, expectedReport(txns).rows);
      // The accept went through at once: the ingest read nothing back and did not finalize.
      const ingest = ingesting.app.storageTransactions();
      assert.equal(ingest['blob.get'], undefined, JSON.stringify(ingest));
      assert.equal(ingesting.parts.meter.snapshot()['blob.put'], 4, 'claim, chunk, open index, accept');
      assert.equal(draining.parts.meter.snapshot()['blob.get'], 2, 'the chunk and the manifest, read once: no wait');
    } finally {
      await ingesting.app.close();
      await draining.app.close();
      await observer.app.close();
    }
  });

  test('a missing input queue: 503, the queue named in the log and in health (degraded), and nothing created', async () => {
    const settings = await deployment();
    await provisionStorage(settings.direct);
    const names = entityNames(settings.direct.namePrefix, settings.direct.tuning.partitions);
    const raw = rawStorage(settings.direct);
    // A deployment that lost its input queues (whichever partition the batch lands on is missing).
    for (const q of names.inputQueues()) await raw.queue(q).delete();
    const { app } = composedApp(settings.app, { publisher: new CapturingPublisher(), log: quietLog });
    const wire0 = wire!.snapshot();
    const logged = logs.length;
    try {
      assert.equal(app.health().status, 'ok', 'nothing is known to be missing before a request finds it');
      const res = await post(app, toNdjson(generate(100, 49, 10)));
      assert.equal(res.status, 503, JSON.stringify(res.jsonBody));
      assert.equal((res.jsonBody as { error: string }).error, 'unavailable');
      assert.equal(res.headers && (res.headers as Record<string, string>)['Retry-After'], '60');
      const said = logs.slice(logged).join('\n');
      const missing = names.inputQueues().filter((q) => said.includes(`"${q}"`));
      assert.equal(missing.length, 1, `the log names the queue: ${said}`);
      assert.match(said, /does not exist: infra\/ provisions it/);
      const state = health(app).jsonBody as HealthState;
      assert.equal(state.status, 'degraded');
      assert.deepEqual(state.notProvisioned, [`queue ${missing[0]}`]);
      assert.equal(await raw.queue(missing[0]!).exists(), false, 'the app did not create it');
    } finally {
      await app.close();
    }
    assert.deepEqual(creates(meterDelta(wire!.snapshot(), wire0)), {}, 'no create at the wire');
  });

  test('a missing container is named the same way, and health is ok again once a request to it succeeds', async () => {
    const settings = await deployment();
    await provisionStorage(settings.direct);
    const names = entityNames(settings.direct.namePrefix, settings.direct.tuning.partitions);
    const raw = rawStorage(settings.direct);
    await raw.container('work').delete();
    const { app } = composedApp(settings.app, { publisher: new CapturingPublisher(), log: quietLog });
    try {
      const logged = logs.length;
      const res = await post(app, toNdjson(generate(100, 50, 10)));
      assert.match(logs.slice(logged).join('\n'), /not provisioned: storage container "[^"]+-work" does not exist/);
      assert.equal(res.status, 503, JSON.stringify(res.jsonBody));
      assert.deepEqual(app.health().notProvisioned, [`container ${names.container('work')}`]);
      await provisionStorage(settings.direct);
      const again = await post(app, toNdjson(generate(100, 51, 10)));
      assert.equal(again.status, 202, JSON.stringify(again.jsonBody));
      assert.equal(app.health().notProvisioned, undefined);
      assert.equal(app.health().status, 'ok');
    } finally {
      await app.close();
    }
  });
});
