/**
 * Retry discipline: a queue that answers 503 ServerBusy without end is backed off on its own
 * (no tight retry loop), the other partitions keep draining, and once the fault clears the
 * delayed continuation finishes the batch.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { Report } from '../../shared/billing/report';
import { partitionOf } from '../../shared/names';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { completed, post, pump, report } from '../support/invoke';
import { testRuntime, useProxiedStorage } from '../support/storage';

const storage = useProxiedStorage();

describe('persistent 503 on one partition', () => {
  test('that partition backs off alone; the others drain; the batch completes once it clears', async (t) => {
    const { app, parts, events, observer, observerParts } = await testRuntime({
      StorageConnection: storage.connectionString,
      PUSHDRAIN_CHUNK_SIZE: '50',
      PUSHDRAIN_VISIBILITY_TIMEOUT_SECONDS: '2',
    });
    const txns = generate(800, 501, 30);
    const { batchId, chunks } = (await post(app, toNdjson(txns))).jsonBody as { batchId: string; chunks: number };
    const sick = parts.names.inputQueue(1);
    const onSick = Array.from({ length: chunks }, (_, c) => c).filter((c) => partitionOf(batchId, c, 4) === 1).length;
    assert.ok(onSick > 0 && onSick < chunks);
    const hits = storage.proxy.inject('status503', {
      times: 1_000_000,
      match: { service: 'queue', path: new RegExp(`/${sick}(/|$)`) },
    });

    // Everything but the sick partition completes while the fault lasts.
    const t0 = Date.now();
    await pump(
      app,
      events,
      async () => ((await observerParts.manifests.read(batchId))?.manifest.done.length ?? 0) >= chunks - onSick,
      60_000,
    );
    const faultedFor = Date.now() - t0;
    const m = (await observerParts.manifests.read(batchId))!.manifest;
    assert.equal(m.done.length, chunks - onSick, 'the healthy partitions finished their chunks');
    assert.equal(m.state, 'accepted');
    // Backed off, not hammered: with the SDK's own 4 tries per call, a tight loop would be hundreds.
    const rate = hits.hits / Math.max(1, faultedFor / 1000);
    assert.ok(rate < 20, `requests to the sick queue: ${hits.hits} in ${faultedFor} ms`);

    storage.proxy.clear();
    await pump(app, events, () => completed(observer, batchId), 60_000);
    assert.deepEqual(((await report(observer, batchId)).jsonBody as Report).totals, expectedReport(txns).totals);
    t.diagnostic(
      `sick queue saw ${hits.hits} requests in ${faultedFor} ms of fault; the batch completed after it cleared`,
    );
  });
});
