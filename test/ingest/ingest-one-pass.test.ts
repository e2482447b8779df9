/**
 * Ingest's one pass on real Azurite: a batch whose chunks fit the memory bound is written from
 * what validation kept; a bigger one is cut in a second pass, into the very same blobs. Either
 * way the report equals the independent computation.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { OpenBatches } from '../../shared/batch/open-batches';
import type { Report } from '../../shared/billing/report';
import type { AppParts } from '../../shared/compose/app-parts';
import { bufferSource } from '../../shared/ingest/body';
import { Ingestor } from '../../shared/ingest/ingest';
import { layout } from '../../shared/layout';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { completed, pump, report } from '../support/invoke';
import { testRuntime, useStorage } from '../support/storage';

useStorage();

/** The app's own ingest step, with another memory bound for kept chunks. */
function ingestorWith(parts: AppParts, keepBytes: number): Ingestor {
  const { blobs, queues, manifests, notifier, finalizer, names, settings, log } = parts;
  return new Ingestor({
    blobs,
    queues,
    manifests,
    notifier,
    open: new OpenBatches(blobs),
    finalizer,
    names,
    chunkSize: settings.tuning.chunkSize,
    now: () => Date.now(),
    log,
    keepBytes,
  });
}

async function chunkHashes(parts: AppParts, batchId: string, chunks: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < chunks; i++)
    out.push((await parts.blobs.info(layout.chunk(batchId, i)))?.metadata.sha256 ?? 'missing');
  return out;
}

describe('one pass over the body', () => {
  test('kept chunks and second-pass chunks are the same blobs, and both batches report right', async () => {
    const { app, parts, events, observer } = await testRuntime({ PUSHDRAIN_CHUNK_SIZE: '300' });
    const txns = generate(2_500, 17, 80);
    const body = toNdjson(txns);
    let opened = 0;
    const source = bufferSource(body, false, 1e9);
    const ingest = (keepBytes: number) =>
      ingestorWith(parts, keepBytes).ingest({ open: () => (opened++, source()), format: 'ndjson', source: 'http' });
    const kept = await ingest(64 * 1024 * 1024);
    assert.equal(opened, 1, 'kept: the body was read once');
    const cut = await ingest(1_000); // a few chunks' worth: the bound is passed early
    assert.equal(opened, 3, 'past the bound: read again to cut the chunks');
    assert.equal(kept.chunks, 9);
    assert.equal(cut.chunks, 9);
    assert.deepEqual(await chunkHashes(parts, cut.batchId, 9), await chunkHashes(parts, kept.batchId, 9));
    const expected = expectedReport(txns);
    for (const { batchId } of [kept, cut]) {
      await pump(app, events, () => completed(observer, batchId), 60_000);
      const got = (await report(observer, batchId)).jsonBody as Report;
      assert.deepEqual([got.rows, got.totals], [expected.rows, expected.totals]);
    }
  });
});
