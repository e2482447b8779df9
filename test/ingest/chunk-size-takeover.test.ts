/**
 * The chunk size rule against what a batch's claim recorded, on real Azurite through the real
 * handlers: a fresh batch is cut by the rule (chunks of two gzip members), and an Idempotency-Key
 * retry that takes over an abandoned claim cuts as that claim said: with the pieces validation
 * kept when they make up its chunks, and cut again from them when they do not (a request's body
 * is read once). Every report equals the independent computation.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';

import type { Manifest } from '../../shared/batch/manifest';
import type { Report } from '../../shared/billing/report';
import { batchIdFor, layout } from '../../shared/layout';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { completed, post, pump, report } from '../support/invoke';
import { testRuntime, useStorage } from '../support/storage';

useStorage();

const txns = generate(40_000, 24, 60);
const body = toNdjson(txns);
const expected = expectedReport(txns);

/** What an earlier attempt with this key left: abandoned, cut with `chunkSize` (and `chunkPiece`). */
function abandoned(key: string, chunkSize: number, chunkPiece?: number): Manifest {
  return {
    v: 1,
    batchId: batchIdFor(key),
    state: 'abandoned',
    source: 'http',
    idempotencyKey: key,
    attempt: 'an-earlier-request',
    bodySha256: createHash('sha256').update(body).digest('hex'),
    submittedAt: new Date(Date.now() - 60_000).toISOString(),
    transactions: txns.length,
    chunkSize,
    ...(chunkPiece !== undefined ? { chunkPiece } : {}),
    chunks: 0,
    queues: [],
    notification: 'pending',
    done: [],
    failed: [],
    error: 'the host went away',
  };
}

describe('chunk sizes a batch records', () => {
  test('fresh, and taken over from claims cut another way: each cut as its manifest says', async () => {
    const { app, parts, events, observer, observerParts } = await testRuntime();
    const cases = [
      // The rule: 40,000 ÷ (2 × 4 partitions) = 5,000 → 4,000, two members of 2,000.
      { key: 'fresh', claim: undefined, chunks: 10, size: 4_000, piece: 2_000 },
      // An earlier version's claim: chunks of 2,000, one member (the kept pieces themselves).
      { key: 'older-2000', claim: abandoned('older-2000', 2_000), chunks: 20, size: 2_000, piece: undefined },
      // Chunks the kept pieces cannot make up: cut again from the pieces' lines.
      { key: 'older-3000', claim: abandoned('older-3000', 3_000), chunks: 14, size: 3_000, piece: undefined },
      // A claim of the rule's own kind, with other sizes than this request's rule would choose.
      { key: 'other-rule', claim: abandoned('other-rule', 8_000, 2_000), chunks: 5, size: 8_000, piece: 2_000 },
    ];
    for (const c of cases) {
      if (c.claim) assert.ok(await parts.manifests.create(c.claim), `${c.key}: the abandoned claim is in place`);
      const res = await post(app, body, { 'idempotency-key': c.key });
      assert.equal(res.status, 202, JSON.stringify(res.jsonBody));
      const { batchId, chunks } = res.jsonBody as { batchId: string; chunks: number };
      assert.equal(batchId, batchIdFor(c.key));
      assert.equal(chunks, c.chunks, c.key);
      const m = (await observerParts.manifests.read(batchId))!.manifest;
      assert.equal(m.chunkSize, c.size, c.key);
      assert.equal(m.chunkPiece, c.piece, c.key);
      const first = await observerParts.blobs.info(layout.chunk(batchId, 0));
      assert.equal(first?.metadata.count, String(c.size), `${c.key}: chunk 0 holds ${c.size}`);
      await pump(app, events, () => completed(observer, batchId), 120_000);
      const got = (await report(observer, batchId)).jsonBody as Report;
      assert.equal(got.transactions, txns.length, c.key);
      assert.deepEqual(got.rows, expected.rows, c.key);
      assert.deepEqual(got.totals, expected.totals, c.key);
    }
  });
});
