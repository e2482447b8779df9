/**
 * The report's cost, and the one report two finalizers agree on, on Azurite: a report carries the
 * cost as its finalize counted it, so two finalizers of one batch (two instances, or the watchdog)
 * build different bytes; the first write stays and the digest the batch records is of those bytes.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';

import type { Manifest } from '../../shared/batch/manifest';
import { OpenBatches } from '../../shared/batch/open-batches';
import type { Report } from '../../shared/billing/report';
import { layout } from '../../shared/layout';
import { Finalizer } from '../../shared/pipeline/finalize';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { completed, post, pump } from '../support/invoke';
import { quietLog, testRuntime, useStorage } from '../support/storage';

useStorage();

describe('the report and its cost', () => {
  test('two finalizers at once with different clocks: one report stays, and the recorded digest is of its bytes', async () => {
    const { app, parts, events, observer } = await testRuntime({ PUSHDRAIN_CHUNK_SIZE: '500' });
    const res = await post(app, toNdjson(generate(2_000, 81, 50)));
    assert.equal(res.status, 202, JSON.stringify(res.jsonBody));
    const { batchId } = res.jsonBody as { batchId: string };
    await pump(app, events, () => completed(observer, batchId), 60_000);
    const { blobs, manifests, settings } = parts;

    // Back to the moment before finalize: settled, accepted, no report. Written past the store,
    // which allows no way back from completed.
    const done = (await manifests.read(batchId))?.manifest;
    assert.ok(done);
    const { completedAt: _c, reportSha256: _r, latencyMs: _l, events: _e, ...rest } = done;
    const before: Manifest = { ...rest, state: 'accepted' };
    await blobs.write(layout.manifest(batchId), Buffer.from(JSON.stringify(before)), {
      contentType: 'application/json',
    });
    await blobs.remove(layout.report(batchId));

    const finalizerAt = (iso: string): Finalizer =>
      new Finalizer({
        blobs,
        manifests,
        open: new OpenBatches(blobs),
        now: () => Date.parse(iso),
        log: quietLog,
        prices: settings.prices,
      });
    const times = ['2026-01-01T00:00:01.000Z', '2026-01-01T00:00:02.000Z'];
    await Promise.all(times.map((t) => finalizerAt(t).ifSettled(before)));

    const m = (await manifests.read(batchId))?.manifest;
    assert.equal(m?.state, 'completed');
    const kept = await blobs.read(layout.report(batchId));
    assert.ok(kept);
    assert.equal(
      createHash('sha256').update(kept.body).digest('hex'),
      m?.reportSha256,
      'the digest the batch records is of the bytes that stayed',
    );
    const report = JSON.parse(kept.body.toString('utf8')) as Report;
    assert.ok(report.cost && times.includes(report.cost.asOf), JSON.stringify(report.cost));
    assert.ok(report.cost.storageTransactions > 0 && report.cost.estimate.perBatch > 0);
    assert.equal(report.transactions, 2_000);
  });
});
