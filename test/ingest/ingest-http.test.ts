/**
 * POST /api/batches through the real handler on Azurite: every rejection writes nothing,
 * Idempotency-Key replays enqueue nothing, and a failure part-way leaves no accepted batch.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';

import { health } from '../../functions/health-http';
import { ingestSweep } from '../../functions/ingest-timer';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { blobNames, totalQueued } from '../support/inspect';
import { invalidOnPurpose } from '../support/invalid-on-purpose';
import { context, post, report, status } from '../support/invoke';
import { testRuntime, useStorage } from '../support/storage';

useStorage();

const good = {
  id: 't1',
  account: 'a1',
  timestamp: '2026-03-01T10:00:00Z',
  type: 'charge',
  amount: 100,
  currency: 'EUR',
  region: 'EU',
};

interface ErrorBody {
  error: string;
  message: string;
  details?: { line: number; field: string; message: string }[];
}

describe('POST /api/batches rejections write nothing', () => {
  test('each schema rule, with line numbers, and nothing written', async () => {
    const { app, parts, events } = await testRuntime();
    const lines = [
      JSON.stringify(good),
      '{not json',
      JSON.stringify({ ...good, id: 'bad/id' }),
      JSON.stringify({ ...good, id: 't4', account: '' }),
      JSON.stringify({ ...good, id: 't5', timestamp: 'yesterday' }),
      JSON.stringify({ ...good, id: 't6', type: 'gift' }),
      JSON.stringify({ ...good, id: 't7', amount: 0 }),
      JSON.stringify({ ...good, id: 't8', currency: 'eu' }),
      JSON.stringify({ ...good, id: 't9', region: 'not a region' }),
      JSON.stringify({ ...good, id: 't10', extra: true }),
      JSON.stringify({ ...good, account: 'a2' }), // duplicate id t1
      JSON.stringify({ id: 't12' }),
    ];
    const res = await post(app, lines.join('\n'));
    assert.equal(res.status, 400);
    const body = res.jsonBody as ErrorBody;
    assert.equal(body.error, 'invalid_batch');
    const seen = body.details!.map((d) => `${d.line}:${d.field}`);
    assert.deepEqual(seen.slice(0, 11), [
      '2:',
      '3:id',
      '4:account',
      '5:timestamp',
      '6:type',
      '7:amount',
      '8:currency',
      '9:region',
      '10:extra',
      '11:id',
      '12:account',
    ]);
    assert.deepEqual(seen.slice(11), ['12:timestamp', '12:type', '12:amount', '12:currency']);
    assert.deepEqual(await blobNames(parts), []);
    assert.equal(await totalQueued(parts), 0);
    assert.equal(events.all.length, 0);
  });

  test('415, 413, gzip bomb, bad Idempotency-Key, empty batch: clear errors, nothing written', async () => {
    const { app, parts, events } = await testRuntime({
      PUSHDRAIN_MAX_BODY_BYTES: '4096',
      PUSHDRAIN_MAX_INFLATED_BYTES: '65536',
    });
    const cases: [string, Promise<{ status?: number; jsonBody?: unknown }>, number, string][] = [
      [
        'text/plain',
        post(app, JSON.stringify(good), invalidOnPurpose({ 'content-type': 'text/plain' })),
        415,
        'unsupported_media_type',
      ],
      [
        'no content type',
        post(app, JSON.stringify(good), invalidOnPurpose({ 'content-type': '' })),
        415,
        'unsupported_media_type',
      ],
      [
        'br encoding',
        post(app, JSON.stringify(good), invalidOnPurpose({ 'content-encoding': 'br' })),
        415,
        'unsupported_media_type',
      ],
      ['oversize', post(app, toNdjson(generate(100))), 413, 'too_large'],
      [
        'gzip bomb',
        post(app, gzipSync(Buffer.alloc(4 * 1024 * 1024, 0x20)), { 'content-encoding': 'gzip' }),
        413,
        'too_large',
      ],
      [
        'bad key',
        post(app, JSON.stringify(good), invalidOnPurpose({ 'idempotency-key': 'has space' })),
        400,
        'invalid_idempotency_key',
      ],
      ['empty', post(app, '', invalidOnPurpose()), 400, 'invalid_batch'],
      ['empty array', post(app, '[]', invalidOnPurpose({ 'content-type': 'application/json' })), 400, 'invalid_batch'],
      [
        'not an array',
        post(app, JSON.stringify(good), invalidOnPurpose({ 'content-type': 'application/json' })),
        400,
        'invalid_batch',
      ],
    ];
    for (const [name, p, code, error] of cases) {
      const res = await p;
      assert.equal(res.status, code, name);
      assert.equal((res.jsonBody as ErrorBody).error, error, name);
    }
    assert.deepEqual(await blobNames(parts), []);
    assert.equal(await totalQueued(parts), 0);
    assert.equal(events.all.length, 0);
  });
});

describe('POST /api/batches acceptance', () => {
  test('JSON array, gzip, and NDJSON bodies are accepted; status and report routes answer', async () => {
    const { app } = await testRuntime({ PUSHDRAIN_CHUNK_SIZE: '10' });
    const txns = generate(25, 5);
    const json = await post(app, JSON.stringify(txns), { 'content-type': 'application/json; charset=utf-8' });
    assert.equal(json.status, 202);
    assert.equal((json.jsonBody as { chunks: number }).chunks, 3);
    const gz = await post(app, gzipSync(toNdjson(generate(5, 6))), { 'content-encoding': 'gzip' });
    assert.equal(gz.status, 202);
    const id = (json.jsonBody as { batchId: string }).batchId;
    const st = await status(app, id);
    assert.equal(st.status, 200);
    assert.equal((st.jsonBody as { status: string }).status, 'accepted');
    assert.equal((await report(app, id)).status, 409);
    assert.deepEqual((await report(app, id)).jsonBody, {
      type: 'tag:pushdrain,2026:not_ready',
      title: 'The report is not ready',
      detail: 'the batch is accepted: its report is not ready',
      error: 'not_ready',
      message: 'the batch is accepted: its report is not ready',
      status: 'accepted',
    });
    assert.equal((await status(app, 'b-00000000-0000-0000-0000-000000000000')).status, 404);
    assert.equal((await status(app, '..%2Fmanifest', invalidOnPurpose())).status, 400);
    assert.equal((await status(app, 'A/../../x', invalidOnPurpose())).status, 400);
    const h = health(app);
    assert.equal(h.status, 200);
    assert.ok((h.jsonBody as { storageTransactions: { total: number } }).storageTransactions.total > 0);
  });

  test('Idempotency-Key: a resubmission returns the same batchId and enqueues nothing', async () => {
    const { app, parts, events } = await testRuntime({ PUSHDRAIN_CHUNK_SIZE: '10' });
    const body = toNdjson(generate(40, 9));
    const first = await post(app, body, { 'idempotency-key': 'order-2026-11-20:001' });
    assert.equal(first.status, 202);
    const queued = await totalQueued(parts);
    const published = events.all.length;
    const blobs = await blobNames(parts);
    assert.equal(queued, 4);
    const again = await post(app, body, { 'idempotency-key': 'order-2026-11-20:001' });
    assert.equal(again.status, 202);
    assert.equal((again.jsonBody as { batchId: string }).batchId, (first.jsonBody as { batchId: string }).batchId);
    assert.equal((again.headers as Record<string, string>)['Idempotent-Replayed'], 'true');
    assert.equal(await totalQueued(parts), queued, 'nothing new enqueued');
    // No chunk has settled yet, so the replay may follow a kill that cut the first wake-up off:
    // it sends the same wake-ups again (test/recovery/accept-publish-crash.test.ts), and nothing else.
    const wakeUps = (from: number, to: number): string[] =>
      events.all
        .slice(from, to)
        .map((c) => `${c.event.queueName} ${c.event.batchId}`)
        .sort();
    assert.deepEqual(wakeUps(published, events.all.length), wakeUps(0, published), 'the same wake-ups again');
    assert.deepEqual(await blobNames(parts), blobs, 'nothing new written');
    // A replay or a conflict reads the manifest and writes nothing: not even a refused create.
    const writes = (): number =>
      Object.entries(app.storageTransactions())
        .filter(([op]) => op === 'blob.put' || op.startsWith('queue.put'))
        .reduce((a, [, n]) => a + n, 0);
    const writesBefore = writes();
    await post(app, body, { 'idempotency-key': 'order-2026-11-20:001' });
    const conflict = await post(app, toNdjson(generate(40, 10)), { 'idempotency-key': 'order-2026-11-20:001' });
    assert.equal(conflict.status, 422);
    assert.equal((conflict.jsonBody as ErrorBody).error, 'idempotency_conflict');
    assert.equal(writes(), writesBefore, 'no write request of any kind');
    assert.deepEqual(await blobNames(parts), blobs);
  });

  test('a failed publish still answers 202 and leaves the notification pending', async () => {
    const { app, parts, events } = await testRuntime();
    events.failNext = 1;
    const res = await post(app, toNdjson(generate(10, 11)));
    assert.equal(res.status, 202);
    const id = (res.jsonBody as { batchId: string }).batchId;
    const m = (await parts.manifests.read(id))!.manifest;
    assert.equal(m.state, 'accepted');
    assert.equal(m.notification, 'pending');
    assert.equal(await totalQueued(parts), 1, 'the work is durably enqueued');
    assert.equal(events.all.length, 0);
    assert.ok((await blobNames(parts, ['batches'])).includes(`batches/open/${id}`), 'indexed as open before the 202');
    // The next sweep's recovery re-publishes the lost WorkDetected.
    const files = await ingestSweep(app, context('ingestSweep'));
    assert.deepEqual(files, []);
    assert.deepEqual(
      events.all.map((c) => [c.event.queueName, c.event.batchId]),
      [[m.queues[0]!.queue, id]],
    );
    assert.equal((await parts.manifests.read(id))!.manifest.notification, 'sent');
    await ingestSweep(app, context('ingestSweep'));
    assert.equal(events.all.length, 1, 'published once, not on every sweep');
  });

  test('a storage failure part-way through ingest leaves no accepted batch', async () => {
    const { app, parts, events, raw } = await testRuntime({ PUSHDRAIN_CHUNK_SIZE: '5', PUSHDRAIN_PARTITIONS: '4' });
    // Chunks are spread over every partition, so a missing queue fails the enqueue step.
    await raw.queue(parts.names.inputQueue(2)).delete();
    const res = await post(app, toNdjson(generate(40, 12)), { 'idempotency-key': 'partial-1' });
    assert.equal(res.status, 503);
    assert.ok(!JSON.stringify(res.jsonBody).includes('AccountKey'));
    assert.equal(events.all.length, 0, 'nothing published for a batch that was not accepted');
    const manifests = (await blobNames(parts, ['batches'])).filter((n) => n.endsWith('manifest.json'));
    assert.equal(manifests.length, 1);
    const id = manifests[0]!.split('/')[1]!;
    assert.equal((await parts.manifests.read(id))!.manifest.state, 'abandoned');
    assert.equal((await status(app, id)).status, 404, 'no batch claims to be accepted');
    // The client's retry with the same key takes the abandoned attempt over and succeeds.
    await raw.queue(parts.names.inputQueue(2)).create();
    const retry = await post(app, toNdjson(generate(40, 12)), { 'idempotency-key': 'partial-1' });
    assert.equal(retry.status, 202);
    assert.equal((retry.jsonBody as { batchId: string }).batchId, id);
  });
});
