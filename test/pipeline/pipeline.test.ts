/**
 * The whole data path on real Azurite through the real handlers: POST → chunk blobs →
 * partitioned queues → drain (map) → results → aggregate (reduce) → report.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { Report } from '../../shared/billing/report';
import { meterDelta } from '../../shared/storage/meter';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { completed, post, pump, report, status } from '../support/invoke';
import { testRuntime, useStorage } from '../support/storage';

useStorage();

describe('pipeline on Azurite', () => {
  test('100,000 transactions: report equals the independent computation; storage transactions metered', async (t) => {
    // Default tuning (chunk size, back-off, task rule): the metered figure is the real one.
    const { app, parts, events, observer, observerParts } = await testRuntime({
      PUSHDRAIN_MIN_IDLE_MS: '100',
      PUSHDRAIN_MAX_IDLE_MS: '5000',
    });
    const txns = generate(100_000, 42, 2_000);
    const body = toNdjson(txns);
    const before = app.storageTransactions();
    const started = Date.now();

    const res = await post(app, body);
    const ingestMs = Date.now() - started;
    assert.equal(res.status, 202, JSON.stringify(res.jsonBody));
    const accepted = res.jsonBody as { batchId: string; status: string; transactions: number; chunks: number };
    assert.equal(accepted.status, 'accepted');
    assert.equal(accepted.transactions, 100_000);
    // The chunk size rule (docs/DESIGN.md): 100,000 ÷ (2 chunks × 4 partitions) = 12,500, in whole
    // 2,000-line pieces 12,000: eight such chunks and a last one of 4,000.
    assert.equal(accepted.chunks, 9);
    assert.equal((res.headers as Record<string, string>).Location, `/api/batches/${accepted.batchId}`);

    // One WorkDetected per input queue touched, each after its work was enqueued.
    const first = events.all.map((c) => c.event);
    assert.deepEqual(first.map((e) => e.queueName).sort(), parts.names.inputQueues().sort(), 'every partition used');
    assert.ok(first.every((e) => e.role === 'input' && e.payloadSize > 0 && e.batchId === accepted.batchId));

    const pumped = await pump(app, events, () => completed(observer, accepted.batchId), 120_000);
    const elapsed = Date.now() - started;
    const used = meterDelta(app.storageTransactions(), before);
    const latency = (await observerParts.manifests.read(accepted.batchId))?.manifest.latencyMs;

    const st = await status(observer, accepted.batchId);
    assert.equal(st.status, 200);
    const sb = st.jsonBody as Record<string, unknown>;
    assert.equal(sb.status, 'completed');
    assert.equal(sb.chunksDone, 9);
    assert.equal(sb.chunksFailed, 0);
    assert.ok(typeof sb.completedAt === 'string');

    const rep = await report(observer, accepted.batchId);
    assert.equal(rep.status, 200);
    const got = rep.jsonBody as Report;
    const expected = expectedReport(txns);
    assert.equal(got.transactions, 100_000);
    assert.deepEqual(got.rows, expected.rows);
    assert.deepEqual(got.totals, expected.totals);

    const csv = await report(observer, accepted.batchId, { format: 'csv' });
    assert.equal(csv.status, 200);
    assert.equal((csv.body as string).trimEnd().split('\r\n').length, expected.rows.length + 1);

    const per1000 = (used.total ?? 0) / 100;
    t.diagnostic(
      `100k batch: ingest ${ingestMs} ms, completed ${latency} ms after submission, ${elapsed} ms until the test saw it; ${pumped.invocations} wake-ups (${pumped.byRole.input} drain, ${pumped.byRole.output} aggregate)`,
    );
    t.diagnostic(`storage transactions: ${used.total} total = ${per1000.toFixed(2)} per 1,000 business transactions`);
    t.diagnostic(`by operation: ${JSON.stringify(used)}`);
    assert.ok(per1000 > 0);
  });
});

describe('a batch of one chunk', () => {
  test('the map step folds it into the manifest itself: no results-queue round trip, the same report', async () => {
    const { app, events, observer } = await testRuntime({
      PUSHDRAIN_MIN_IDLE_MS: '100',
      PUSHDRAIN_MAX_IDLE_MS: '5000',
    });
    const txns = generate(1_000, 43, 200);
    const before = app.storageTransactions();
    const res = await post(app, toNdjson(txns));
    assert.equal(res.status, 202, JSON.stringify(res.jsonBody));
    const accepted = res.jsonBody as { batchId: string; chunks: number };
    assert.equal(accepted.chunks, 1);
    await pump(app, events, () => completed(observer, accepted.batchId), 60_000);
    const rep = await report(observer, accepted.batchId);
    assert.equal(rep.status, 200);
    const expected = expectedReport(txns);
    assert.deepEqual((rep.jsonBody as Report).rows, expected.rows);
    assert.deepEqual((rep.jsonBody as Report).totals, expected.totals);
    assert.deepEqual(
      events.all.map((c) => c.event.role),
      ['input'],
      'no WorkDetected for results: nothing went there',
    );
    const used = meterDelta(app.storageTransactions(), before);
    // One pointer in, received once, deleted once: the results queue was not used.
    assert.deepEqual(
      { put: used['queue.put'], get: used['queue.get'], delete: used['queue.delete'] },
      { put: 1, get: 1, delete: 1 },
      JSON.stringify(used),
    );
  });
});
