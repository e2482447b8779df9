/**
 * The map step within the process's memory budget, on Azurite through the real handlers: a drain
 * task receives every chunk of the batch at once, and each waits until its decoded size fits.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { Report } from '../../shared/billing/report';
import { MAP_BYTES_PER_TRANSACTION } from '../../shared/pipeline/map-processor';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { completed, post, pump, report } from '../support/invoke';
import { testRuntime, uniquePrefix, useStorage } from '../support/storage';

useStorage();

describe('the memory budget', () => {
  test('chunks received together are mapped one at a time when only one fits, and the report is exact', async () => {
    // 1 MB of instance memory: a budget of 256 KiB, room for one 500-line chunk (200,000 bytes) and not two.
    const env = {
      PUSHDRAIN_NAME_PREFIX: uniquePrefix(),
      PUSHDRAIN_INSTANCE_MEMORY_MB: '1',
      PUSHDRAIN_PARTITIONS: '1',
      PUSHDRAIN_CHUNK_SIZE: '500',
      PUSHDRAIN_MIN_IDLE_MS: '100',
      PUSHDRAIN_MAX_IDLE_MS: '2000',
    };
    // Two instances of one app: the batch is ingested on one (its ingest is held in that one's
    // budget), and its wake-ups drain it on the other, whose budget holds only chunks.
    const { app, events, observer } = await testRuntime(env);
    const ingest = await testRuntime(env, { publisher: events });
    const chunkBytes = 500 * MAP_BYTES_PER_TRANSACTION;
    assert.equal(app.health().memory.limitBytes, 256 * 1024);
    const txns = generate(3_000, 71, 300);
    const res = await post(ingest.app, toNdjson(txns));
    assert.equal(res.status, 202, JSON.stringify(res.jsonBody));
    const accepted = res.jsonBody as { batchId: string; chunks: number };
    assert.equal(accepted.chunks, 6);
    await pump(app, events, () => completed(observer, accepted.batchId), 60_000);

    const memory = app.health().memory;
    assert.equal(memory.peakBytes, chunkBytes, `one chunk held at a time: ${JSON.stringify(memory)}`);
    assert.ok(memory.waits >= 1, `chunks received together waited for room: ${JSON.stringify(memory)}`);
    assert.equal(memory.inUseBytes, 0, 'everything given back');
    const rep = await report(observer, accepted.batchId);
    assert.equal(rep.status, 200);
    const expected = expectedReport(txns);
    assert.deepEqual((rep.jsonBody as Report).rows, expected.rows);
    assert.deepEqual((rep.jsonBody as Report).totals, expected.totals);
  });
});
