/**
 * What a batch cost, through the real path: the app composed as deployed, its Storage traffic
 * through a counting proxy in front of Azurite. The batch's status shows its usage, and the
 * Storage requests on it are the very ones the wire carried for it (nothing else ran meanwhile);
 * a price setting moves the estimate; a bad price is refused at start-up, naming its setting.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import type { PushdrainApp } from '../../shared/app';
import type { Report } from '../../shared/billing/report';
import { PRICE_SETTINGS } from '../../shared/config/price-settings';
import { loadSettings } from '../../shared/config/settings';
import type { BatchCost } from '../../shared/cost/batch-cost';
import { storageTotal } from '../../shared/cost/batch-usage';
import { ConfigError } from '../../shared/errors';
import { layout } from '../../shared/layout';
import { meterDelta } from '../../shared/storage/meter';
import { type CountingProxy, startCountingProxy } from '../../tools/bench/support/counting-proxy';
import { provisionStorage } from '../../tools/devstack/provision-storage';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { CapturingPublisher } from '../support/capturing-publisher';
import { composedApp } from '../support/composed-app';
import { completed, post, pump, report, status } from '../support/invoke';
import { readRepoFile } from '../support/repo';
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

/** Bounded: 200 tries 50 ms apart. */
async function until<T>(what: string, get: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const v = await get();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Submits `body`, runs the pipeline until the batch is completed and no drain runs: its batch id. */
async function completedAndQuiet(
  app: PushdrainApp,
  events: CapturingPublisher,
  reader: PushdrainApp,
  body: Buffer,
): Promise<string> {
  const res = await post(app, body);
  assert.equal(res.status, 202, JSON.stringify(res.jsonBody));
  const { batchId } = res.jsonBody as { batchId: string };
  await pump(app, events, () => completed(reader, batchId), 60_000);
  await pump(app, events, () => Promise.resolve(app.drainsInProgress === 0), 30_000);
  return batchId;
}

describe('what a batch cost', () => {
  test("a batch's status shows the Storage requests the wire carried for it, and a price setting moves its estimate", async () => {
    const azurite = await storageUp();
    const wire = proxy!;
    const prefix = uniquePrefix();
    const env = {
      PUSHDRAIN_NAME_PREFIX: prefix,
      PUSHDRAIN_MIN_IDLE_MS: '10',
      PUSHDRAIN_MAX_IDLE_MS: '200',
      PUSHDRAIN_CHUNK_SIZE: '1000',
      PUSHDRAIN_USAGE_LEFTOVERS: 'write',
    };
    const events = new CapturingPublisher();
    const { app, parts } = composedApp(loadSettings({ StorageConnection: wire.connectionString, ...env }), {
      publisher: events,
      log: quietLog,
    });
    // The test's reads go straight to Azurite (not through the wire); one reader at list prices, one at a dearer queue price.
    const direct = loadSettings({ StorageConnection: azurite.connectionString, ...env });
    const { app: listed } = composedApp(direct, { publisher: new CapturingPublisher(), log: quietLog });
    const dearer = loadSettings({
      StorageConnection: azurite.connectionString,
      ...env,
      PUSHDRAIN_PRICE_QUEUE_10K: '0.4',
    });
    const { app: dear } = composedApp(dearer, { publisher: new CapturingPublisher(), log: quietLog });
    try {
      await provisionStorage(direct);
      const wire0 = wire.snapshot();
      const batchId = await completedAndQuiet(app, events, listed, toNdjson(generate(3_000, 51, 60)));
      // The leftover usage (the terminal write, the deletes and the wind-down after it) is flushed by one more write.
      await until('the usage flush', () => {
        const left = parts.usage.pendingOf(batchId);
        return Promise.resolve(left && storageTotal(left) > 0 ? undefined : true);
      });
      const atWire = meterDelta(wire.snapshot(), wire0);
      const cost = await until('the cost on the status', async () => {
        const c = ((await status(listed, batchId)).jsonBody as { cost?: BatchCost }).cost;
        return c && c.storageTransactions === atWire.total ? c : undefined;
      }).catch(async () => ((await status(listed, batchId)).jsonBody as { cost?: BatchCost }).cost);
      assert.ok(cost, 'the status has the cost');
      assert.equal(cost.leftoversCounted, true);
      const { total, ...byOp } = atWire;
      assert.equal(cost.storageTransactions, total, 'every request the wire carried is on the batch');
      assert.deepEqual(cost.storageByOperation, byOp, 'by operation too');
      assert.ok(cost.serviceBusOperations >= 3, `events sent and taken: ${cost.serviceBusOperations}`);
      assert.ok(cost.cpuMs.ingest > 0 && cost.cpuMs.map > 0, JSON.stringify(cost.cpuMs));
      assert.ok(cost.estimate.perBatch > 0 && cost.estimate.pricesAsOf, JSON.stringify(cost.estimate));
      assert.ok(
        Math.abs(cost.estimate.per1000Transactions - cost.estimate.perBatch / 3) < 1e-7,
        'per 1,000 transactions of a 3,000-transaction batch',
      );

      const priced = ((await status(dear, batchId)).jsonBody as { cost: BatchCost }).cost;
      const queueOps = Object.entries(cost.storageByOperation)
        .filter(([op]) => op.startsWith('queue.'))
        .reduce((s, [, n]) => s + n, 0);
      assert.ok(queueOps > 0);
      // Queue operations at $0.40 instead of $0.004 per 10,000: the storage estimate rises by exactly that.
      const rise = (queueOps * (0.4 - 0.004)) / 10_000;
      assert.ok(
        Math.abs(priced.estimate.byService.storage - cost.estimate.byService.storage - rise) < 1e-7,
        `${priced.estimate.byService.storage} vs ${cost.estimate.byService.storage} + ${rise}`,
      );
      assert.equal(priced.estimate.pricesAsOf, undefined, 'prices of its own: no sheet date');

      // The report carries the cost as far as it was counted when the report was written and
      // signed: the requests before it, so less than the final figure, and priced the same way.
      const rep = await report(listed, batchId);
      assert.equal(rep.status, 200);
      const inReport = (rep.jsonBody as Report).cost;
      assert.ok(inReport, 'the report has the cost');
      assert.ok(Date.parse(inReport.asOf) > 0, inReport.asOf);
      assert.ok(
        inReport.storageTransactions > 0 && inReport.storageTransactions < cost.storageTransactions,
        `${inReport.storageTransactions} of ${cost.storageTransactions}: the writes after the report are not in it`,
      );
      assert.ok(inReport.cpuMs.ingest > 0 && inReport.estimate.perBatch > 0, JSON.stringify(inReport));
      assert.ok(inReport.estimate.perBatch <= cost.estimate.perBatch);
    } finally {
      await app.close();
      await listed.close();
      await dear.close();
    }
  });

  test("by default the usage rides on the batch's own writes: no write of its own, the leftovers uncounted", async () => {
    const azurite = await storageUp();
    const wire = proxy!;
    const env = { PUSHDRAIN_NAME_PREFIX: uniquePrefix(), PUSHDRAIN_MIN_IDLE_MS: '10', PUSHDRAIN_MAX_IDLE_MS: '200' };
    const events = new CapturingPublisher();
    const { app, parts } = composedApp(loadSettings({ StorageConnection: wire.connectionString, ...env }), {
      publisher: events,
      log: quietLog,
    });
    const direct = loadSettings({ StorageConnection: azurite.connectionString, ...env });
    const { app: listed } = composedApp(direct, { publisher: new CapturingPublisher(), log: quietLog });
    try {
      await provisionStorage(direct);
      const wire0 = wire.snapshot();
      const batchId = await completedAndQuiet(app, events, listed, toNdjson(generate(2_000, 53, 40)));
      const left = parts.usage.pendingOf(batchId);
      assert.ok(left && storageTotal(left) > 0, 'usage after the last write is held, not written');
      const puts = (): number => meterDelta(wire.snapshot(), wire0)['blob.put'] ?? 0;
      const putsDone = puts();
      // A flush would come 2 × PUSHDRAIN_MAX_IDLE_MS after the last usage; flushAll is what shutdown runs.
      await parts.usage.flushAll();
      assert.equal(puts(), putsDone, 'no manifest write for the leftovers');
      const cost = ((await status(listed, batchId)).jsonBody as { cost?: BatchCost }).cost;
      assert.ok(cost && cost.storageTransactions > 0, 'the batch shows what rode on its writes');
      assert.equal(cost.leftoversCounted, false);
      const atWire = meterDelta(wire.snapshot(), wire0).total ?? 0;
      assert.equal(cost.storageTransactions + storageTotal(left), atWire, 'all but the leftovers');
    } finally {
      await app.close();
      await listed.close();
    }
  });

  test('a bad price is refused at start-up, naming its setting; README lists each with its default', () => {
    for (const [setting, value] of [
      ['PUSHDRAIN_PRICE_BLOB_WRITE_10K', 'cheap'],
      ['PUSHDRAIN_PRICE_QUEUE_10K', '-0.004'],
      ['PUSHDRAIN_PRICE_FLEX_GB_SECOND', '2.6e-5'],
      ['PUSHDRAIN_PRICE_SERVICE_BUS_MILLION_OPERATIONS', '$0.80'],
      ['PUSHDRAIN_PRICE_FLEX_MEMORY_MB', '0'],
    ] as const) {
      assert.throws(
        () => loadSettings({ StorageConnection: 'UseDevelopmentStorage=true', [setting]: value }),
        (e: unknown) => e instanceof ConfigError && e.message.includes(setting) && e.message.includes(value),
        `${setting}=${value}`,
      );
    }
    // Each price is in README's settings table with its default.
    const readme = readRepoFile('README.md');
    for (const { setting, def } of Object.values(PRICE_SETTINGS))
      assert.ok(readme.includes(`| \`${setting}\` | ${def} |`), `README lists ${setting} with ${def}`);
    const ok = loadSettings({ StorageConnection: 'UseDevelopmentStorage=true', PUSHDRAIN_PRICE_QUEUE_10K: ' 0.05 ' });
    assert.equal(ok.prices.prices.queue10k, 0.05);
    assert.equal(ok.prices.defaults, false);
  });
  test('a refused manifest write gives its usage back, with itself: the manifest gains exactly what was metered', async () => {
    const azurite = await storageUp();
    const env = { PUSHDRAIN_NAME_PREFIX: uniquePrefix(), StorageConnection: azurite.connectionString };
    const settings = loadSettings(env);
    const { app, parts } = composedApp(settings, { publisher: new CapturingPublisher(), log: quietLog });
    const { app: other, parts: otherParts } = composedApp(settings, {
      publisher: new CapturingPublisher(),
      log: quietLog,
    });
    try {
      await provisionStorage(settings);
      const res = await post(app, toNdjson(generate(10, 52, 2)));
      assert.equal(res.status, 202, JSON.stringify(res.jsonBody));
      const { batchId } = res.jsonBody as { batchId: string };
      await parts.usage.flushAll();
      const before = (await parts.manifests.read(batchId))!.manifest.usage;
      assert.ok(before && storageTotal(before) > 0, 'the ingest left its usage on the manifest');
      // Another writer moves the manifest on: this process's known version is now stale.
      await otherParts.manifests.update(batchId, (m) => ({ ...m, progressAt: new Date().toISOString() }));
      const metered0 = parts.meter.total();
      // Some usage for the batch, then a write on the stale version (412), a read and the write again.
      await parts.usage.run(batchId, undefined, async () => {
        await parts.blobs.read({ ...layout.manifest(batchId), name: `no-such-blob-${batchId}` });
        await parts.manifests.update(batchId, (m) => m);
      });
      const metered = parts.meter.total() - metered0;
      assert.ok(metered >= 4, `a read, a refused write, a read and a write: ${metered}`);
      const after = (await otherParts.manifests.read(batchId))!.manifest.usage!;
      assert.equal(storageTotal(after) - storageTotal(before), metered, 'each request once, the refused write too');
      assert.equal(parts.usage.pendingOf(batchId), undefined, 'nothing left to write twice');
    } finally {
      await app.close();
      await other.close();
    }
  });
});
