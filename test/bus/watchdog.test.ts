/**
 * The per-batch watchdog and poison redrive, on Azurite: lost pointers are re-enqueued, a lost
 * finalize is redone, a batch that never finishes fails with a reason, and a chunk poisoned by
 * a corrupt blob completes after the blob is fixed and the poison queue redriven.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { HttpRequest } from '@azure/functions';

import { postRedrive } from '../../functions/redrive-http';
import { onWatchdog } from '../../functions/watchdog';
import type { Report } from '../../shared/billing/report';
import { layout } from '../../shared/layout';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { blobNames, queueDepths } from '../support/inspect';
import { invalidOnPurpose } from '../support/invalid-on-purpose';
import { completed, context, post, pump, report, status } from '../support/invoke';
import { testRuntime, useStorage } from '../support/storage';

useStorage();

async function clearQueue(q: { clearMessages(): Promise<unknown> }): Promise<void> {
  await q.clearMessages();
}

describe('watchdog', () => {
  test('acceptance schedules the first check; a check re-enqueues lost work pointers and the batch completes', async () => {
    const { app, parts, events, observer, raw } = await testRuntime({
      PUSHDRAIN_CHUNK_SIZE: '100',
      PUSHDRAIN_WATCHDOG_SLA_SECONDS: '30',
    });
    const txns = generate(500, 301, 20);
    const { batchId } = (await post(app, toNdjson(txns))).jsonBody as { batchId: string };
    assert.deepEqual(events.checks, [{ check: { v: 1, batchId, attempt: 1, settledBefore: 0 }, delayMs: 30_000 }]);
    // Lose every pointer and event (a storage hiccup after the 202, say).
    for (const q of parts.names.inputQueues()) await clearQueue(raw.queue(q));
    events.take();
    const outcome = await onWatchdog(app, JSON.parse(JSON.stringify(events.checks[0]!.check)), context('watchdog'));
    assert.deepEqual(outcome, { kind: 'nudged', missing: 5, reenqueued: 5, nextInMs: 60_000 });
    assert.deepEqual(events.checks[1], { check: { v: 1, batchId, attempt: 2, settledBefore: 0 }, delayMs: 60_000 });
    await pump(app, events, () => completed(observer, batchId));
    assert.deepEqual(((await report(observer, batchId)).jsonBody as Report).rows, expectedReport(txns).rows);
    // The next check finds the batch finished and does nothing.
    assert.deepEqual(await onWatchdog(app, events.checks[1].check, context('watchdog')), { kind: 'finished' });
  });

  test('lost result pointers are re-enqueued from the result blobs', async () => {
    const { app, parts, events, observer, raw } = await testRuntime({ PUSHDRAIN_CHUNK_SIZE: '100' });
    const txns = generate(300, 302, 10);
    const { batchId } = (await post(app, toNdjson(txns))).jsonBody as { batchId: string };
    for (const c of events.take()) await app.drain(c.event); // map only
    await clearQueue(raw.queue(parts.names.resultsQueue));
    events.take();
    const outcome = await app.watchdog({ v: 1, batchId, attempt: 1, settledBefore: 0 });
    assert.equal(outcome.kind, 'nudged');
    assert.equal(outcome.kind === 'nudged' && outcome.reenqueued, 3);
    assert.deepEqual(events.all.at(-1)?.event.role, 'output');
    await pump(app, events, () => completed(observer, batchId));
    assert.deepEqual(((await report(observer, batchId)).jsonBody as Report).totals, expectedReport(txns).totals);
  });

  test('a batch still unfinished at the last check fails with a clear reason', async () => {
    const { app, observer } = await testRuntime({ PUSHDRAIN_CHUNK_SIZE: '100', PUSHDRAIN_WATCHDOG_MAX_CHECKS: '3' });
    const { batchId } = (await post(app, toNdjson(generate(200, 303)))).jsonBody as { batchId: string };
    assert.deepEqual(await app.watchdog({ v: 1, batchId, attempt: 3, settledBefore: 0 }), {
      kind: 'failed',
      missing: 2,
    });
    const st = (await status(observer, batchId)).jsonBody as { status: string; chunksFailed: number; error: string };
    assert.equal(st.status, 'failed');
    assert.equal(st.chunksFailed, 2);
    assert.match(st.error, /watchdog: unfinished after 3 checks/);
  });

  test('a malformed check is completed and logged, never retried', async () => {
    const { app } = await testRuntime();
    assert.equal(await onWatchdog(app, { v: 2 }, context('watchdog')), undefined);
  });
});

describe('poison and redrive', () => {
  test('a corrupt chunk goes to poison at once, the batch fails; after the fix a redrive completes it', async () => {
    const { app, parts, events, observer, raw } = await testRuntime({
      PUSHDRAIN_CHUNK_SIZE: '100',
      PUSHDRAIN_PARTITIONS: '2',
    });
    const txns = generate(400, 304, 15);
    const { batchId } = (await post(app, toNdjson(txns))).jsonBody as { batchId: string };
    const blob = raw.container('work').getBlockBlobClient(layout.chunk(batchId, 2).name);
    const good = await blob.downloadToBuffer();
    await blob.uploadData(Buffer.from('not gzip at all'));
    await pump(app, events, () => completed(observer, batchId));
    const st = (await status(observer, batchId)).jsonBody as { status: string; chunksFailed: number; error: string };
    assert.equal(st.status, 'failed');
    assert.equal(st.chunksFailed, 1);
    assert.match(st.error, /chunk 2: chunk blob checksum mismatch/);
    const depths = await queueDepths(parts);
    const poisoned = Object.entries(depths).filter(([q, n]) => q.endsWith('-poison') && n > 0);
    assert.equal(poisoned.length, 1, 'one message in one poison queue, on its first delivery');
    const record = JSON.parse((await raw.queue(poisoned[0]![0]).peekMessages()).peekedMessageItems[0]!.messageText) as {
      reason: string;
      dequeueCount: number;
    };
    assert.equal(record.dequeueCount, 1);
    assert.equal(record.reason, 'chunk blob checksum mismatch');

    await blob.uploadData(good); // the fix
    const res = await postRedrive(
      app,
      new HttpRequest({
        method: 'POST',
        url: 'http://localhost/api/ops/redrive',
        body: { string: JSON.stringify({ batchId }) },
        headers: { 'content-type': 'application/json' },
      }),
      context('opsRedrive'),
    );
    assert.equal(res.status, 200);
    assert.deepEqual((res.jsonBody as { moved: number; reopenedBatches: string[] }).moved, 1);
    assert.deepEqual((res.jsonBody as { reopenedBatches: string[] }).reopenedBatches, [batchId]);
    assert.equal(((await status(observer, batchId)).jsonBody as { status: string }).status, 'processing');
    assert.ok(
      (await blobNames(parts, ['batches'])).includes(`batches/open/${batchId}`),
      'a reopened batch is back in the open index',
    );
    await pump(app, events, () => completed(observer, batchId));
    const after = (await status(observer, batchId)).jsonBody as { status: string; chunksFailed: number };
    assert.equal(after.status, 'completed');
    assert.equal(after.chunksFailed, 0);
    assert.deepEqual(((await report(observer, batchId)).jsonBody as Report).rows, expectedReport(txns).rows);
    assert.ok(
      !(await blobNames(parts, ['batches'])).includes(`batches/open/${batchId}`),
      'and leaves it once completed',
    );
  });

  test('redrive validates its request', async () => {
    const { app } = await testRuntime();
    // Each refused body is outside the document's schema too; an empty body is every poison queue.
    const bad = async (
      body: string,
      headers = invalidOnPurpose({ 'content-type': 'application/json' }),
    ): Promise<number | undefined> =>
      (
        await postRedrive(
          app,
          new HttpRequest({
            method: 'POST',
            url: 'http://localhost/api/ops/redrive',
            body: { string: body },
            headers,
          }),
          context('opsRedrive'),
        )
      ).status;
    assert.equal(await bad('{"queue":"not-ours"}'), 400);
    assert.equal(await bad('{"max":0}'), 400);
    assert.equal(await bad('{"batchId":"../x"}'), 400);
    assert.equal(await bad('{"extra":1}'), 400);
    assert.equal(await bad('[1]'), 400);
    assert.equal(await bad('', { 'content-type': 'application/json' }), 200);
  });
});
