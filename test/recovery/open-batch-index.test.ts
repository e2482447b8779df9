/**
 * Recovery that does not depend on Service Bus: the index of open batches, read by the timer
 * sweep (after the stall threshold) and by `npm start` at start-up (at once). Real Azurite;
 * the events are captured and thrown away, as a broker that lost them would.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { ingestSweep } from '../../functions/ingest-timer';
import { manifestSummary } from '../../shared/batch/manifest-summary';
import type { Report } from '../../shared/billing/report';
import { layout } from '../../shared/layout';
import { meterDelta } from '../../shared/storage/meter';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { movableClock } from '../support/clock';
import { blobNames } from '../support/inspect';
import { completed, context, post, pump, report } from '../support/invoke';
import { quietLog, testRuntime, useStorage } from '../support/storage';

useStorage();

const openMarker = (batchId: string): string => `batches/${layout.openBatch(batchId).name}`;

describe('recovery of open batches', () => {
  test('every event lost after the 202: the sweep repairs the batch once it is stalled and drains it itself', async () => {
    const time = movableClock();
    const { app, parts, events, observer } = await testRuntime(
      { PUSHDRAIN_CHUNK_SIZE: '100', PUSHDRAIN_STALL_SECONDS: '120' },
      { clock: time.clock },
    );
    const txns = generate(450, 401, 12);
    const { batchId } = (await post(app, toNdjson(txns))).jsonBody as { batchId: string };
    assert.ok((await blobNames(parts, ['batches'])).includes(openMarker(batchId)));
    const lost = events.take(); // the broker dropped every WorkDetected
    assert.ok(lost.length > 0);

    // Within the threshold the sweep leaves it alone (a busy queue may simply be behind).
    const early = await app.sweep();
    assert.deepEqual(early.recovered, [{ batchId, kind: 'progressing' }]);
    assert.equal(events.all.length, lost.length, 'nothing published yet');

    time.advance(121_000);
    const { recovered } = await app.sweep();
    assert.deepEqual(
      recovered,
      [{ batchId, kind: 'repaired', reenqueued: 0 }],
      'pointers are still queued: only the wake-ups were lost',
    );
    const woken = new Set(events.all.slice(lost.length).map((c) => c.event.queueName));
    for (const q of new Set(lost.map((c) => c.event.queueName)))
      assert.ok(woken.has(q), `queue ${q}, holding its chunks, is woken again`);
    // Those wake-ups may be lost as the first ones were: the sweep drained the queues itself.
    assert.ok(await completed(observer, batchId), 'completed by the sweep alone, with no event delivered');
    assert.deepEqual(((await report(observer, batchId)).jsonBody as Report).totals, expectedReport(txns).totals);
    assert.ok(
      !(await blobNames(parts, ['batches'])).includes(openMarker(batchId)),
      'a finished batch leaves the index',
    );
  });

  test('lost pointers are re-enqueued from the chunk blobs; a lost finalize is redone', async () => {
    const { app, parts, events, observer, raw } = await testRuntime({
      PUSHDRAIN_CHUNK_SIZE: '100',
      PUSHDRAIN_PARTITIONS: '2',
    });
    const txns = generate(300, 402, 8);
    const { batchId } = (await post(app, toNdjson(txns))).jsonBody as { batchId: string };
    events.take();
    for (const q of parts.names.inputQueues()) await raw.queue(q).clearMessages();
    // npm start after a crash: what the stopped process left is repaired at once, whatever the threshold.
    const first = await app.recover({ leftBefore: Date.now() + 1 });
    assert.deepEqual(first.actions, [{ batchId, kind: 'repaired', reenqueued: 3 }]);
    assert.equal(
      Object.values(first.queued).reduce((a, b) => a + b, 0),
      3,
      'the re-enqueued pointers are reported as queued',
    );
    await pump(app, events, () => completed(observer, batchId), 60_000);
    const expected = expectedReport(txns);
    assert.deepEqual(((await report(observer, batchId)).jsonBody as Report).rows, expected.rows);

    // A crash between the last fold and the finalize: settled, still accepted, no report. Written
    // raw: completed → accepted is no change the manifest store makes (batch-state.ts).
    const done = (await parts.manifests.read(batchId))!.manifest;
    const crashed = { ...done, state: 'accepted' as const, completedAt: undefined, latencyMs: undefined };
    await parts.blobs.write(layout.manifest(batchId), Buffer.from(JSON.stringify(crashed)), {
      contentType: 'application/json',
      metadata: manifestSummary(crashed),
    });
    await raw.container('reports').getBlockBlobClient(layout.report(batchId).name).delete();
    await parts.blobs.write(layout.openBatch(batchId), Buffer.alloc(0), { contentType: 'application/octet-stream' });
    const second = await app.recover({ leftBefore: Date.now() + 1 });
    assert.deepEqual(second.actions, [{ batchId, kind: 'finished' }]);
    assert.deepEqual(((await report(observer, batchId)).jsonBody as Report).rows, expected.rows);
    assert.ok(!(await blobNames(parts, ['batches'])).includes(openMarker(batchId)));
  });

  test('start-up recovery leaves healthy work alone (no repair, no log line, nothing enqueued); what a stopped process left is repaired without duplicates', async () => {
    const warnings: string[] = [];
    const { app, parts, events } = await testRuntime(
      { PUSHDRAIN_CHUNK_SIZE: '100', PUSHDRAIN_PARTITIONS: '2' },
      { log: { ...quietLog, warn: (m) => void warnings.push(m) } },
    );
    const startedBefore = Date.now(); // a process that started before the batch came in, as a fleet's instances do
    const { batchId } = (await post(app, toNdjson(generate(300, 404, 8)))).jsonBody as { batchId: string };
    const published = events.all.length;
    const depths = async (): Promise<number[]> =>
      Promise.all(parts.names.allQueues().map((q) => parts.queues.depth(q)));
    const queued = await depths();
    assert.equal(
      queued.reduce((a, b) => a + b, 0),
      3,
      'three pointers, none taken (the events were captured)',
    );

    const healthy = await app.recover({ leftBefore: startedBefore });
    assert.deepEqual(healthy.actions, [{ batchId, kind: 'progressing' }]);
    assert.deepEqual(warnings, [], 'nothing said about healthy work');
    assert.deepEqual(await depths(), queued, 'nothing enqueued');
    assert.equal(events.all.length, published, 'nothing published');

    // The same batch found by a process that started after the one working on it stopped.
    const left = await app.recover({ leftBefore: Date.now() + 1 });
    assert.deepEqual(left.actions, [{ batchId, kind: 'repaired', reenqueued: 0 }]);
    assert.deepEqual(await depths(), queued, 'its pointers are still queued: no duplicate work');
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? '', /left open by a stopped process/);
  });

  test('markers of finished, abandoned or vanished batches are closed; foreign names are ignored', async () => {
    const { app, parts, events, observer } = await testRuntime({ PUSHDRAIN_CHUNK_SIZE: '100' });
    const { batchId } = (await post(app, toNdjson(generate(50, 403)))).jsonBody as { batchId: string };
    await pump(app, events, () => completed(observer, batchId), 60_000);
    const blobs = parts.blobs;
    const empty = { contentType: 'application/octet-stream' };
    await blobs.write(layout.openBatch(batchId), Buffer.alloc(0), empty); // a crash left it behind
    await blobs.write(layout.openBatch('b-gone'), Buffer.alloc(0), empty); // no manifest at all
    await blobs.write({ container: 'batches', name: 'open/NOT..an-id' }, Buffer.alloc(0), empty);
    const { actions } = await app.recover();
    assert.deepEqual(
      actions.map((a) => [a.batchId, a.kind]).sort(),
      [
        ['b-gone', 'closed'],
        [batchId, 'closed'],
      ].sort(),
    );
    assert.deepEqual(
      (await blobNames(parts, ['batches'])).filter((n) => n.startsWith('batches/open/')),
      ['batches/open/NOT..an-id'],
    );
  });

  test('idle: with nothing open and nothing dropped in, a sweep costs two list requests and nothing else', async () => {
    const { app } = await testRuntime();
    await app.sweep(); // provisioning is done by now
    const before = app.storageTransactions();
    const outcome = await ingestSweep(app, context('ingestSweep'));
    assert.deepEqual(outcome, []);
    assert.deepEqual(meterDelta(app.storageTransactions(), before), { 'blob.list': 2, total: 2 });
  });
});
