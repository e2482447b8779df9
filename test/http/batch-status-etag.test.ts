/**
 * `GET /api/batches/{id}` as a conditional GET, through the real handler on Azurite: an ETag of the
 * status body, a 304 without a body while it is unchanged, a 200 with a new ETag once the batch
 * moved. Each look reads the manifest once either way (one Storage transaction): the CLI's wait saves
 * by looking less often, the 304 saves the body.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { HttpRequest, type HttpResponseInit } from '@azure/functions';

import { getBatch } from '../../functions/batches-http';
import type { PushdrainApp } from '../../shared/app';
import { completed, context, post, pump } from '../support/invoke';
import { sampleBatch } from '../support/sample-batch';
import { type TestRuntime, testRuntime, useStorage } from '../support/storage';

useStorage();

function look(app: PushdrainApp, batchId: string, etag?: string): Promise<HttpResponseInit> {
  return getBatch(
    app,
    new HttpRequest({
      method: 'GET',
      url: `http://localhost/api/batches/${batchId}`,
      params: { batchId },
      headers: etag ? { 'if-none-match': etag } : {},
    }),
    context('getBatch'),
  );
}

const requests = (rt: TestRuntime): number => rt.app.storageTransactions().total ?? 0;

describe('GET /api/batches/{id}: conditional GET', () => {
  test('an ETag, 304 while unchanged (one manifest read, no body), 200 with a new ETag once the batch moved', async () => {
    const rt = await testRuntime();
    const accepted = await post(rt.app, sampleBatch(['t1', 't2']));
    assert.equal(accepted.status, 202);
    const batchId = (accepted.jsonBody as { batchId: string }).batchId;

    const first = await look(rt.app, batchId);
    assert.equal(first.status, 200);
    const headers = first.headers as Record<string, string>;
    assert.match(headers.ETag ?? '', /^"[A-Za-z0-9_-]{27}"$/);
    assert.equal(headers['Cache-Control'], 'private, no-cache');

    const before = requests(rt);
    const same = await look(rt.app, batchId, headers.ETag);
    assert.equal(same.status, 304);
    assert.equal(same.jsonBody, undefined);
    assert.equal(same.body, undefined);
    assert.equal((same.headers as Record<string, string>).ETag, headers.ETag);
    assert.equal(requests(rt) - before, 1, 'a 304 still reads the manifest once');
    assert.equal((await look(rt.app, batchId, `W/${headers.ETag}, "other"`)).status, 304, 'a weak or listed tag');

    await pump(rt.app, rt.events, () => completed(rt.app, batchId));
    const moved = await look(rt.app, batchId, headers.ETag);
    assert.equal(moved.status, 200);
    assert.equal((moved.jsonBody as { status: string }).status, 'completed');
    assert.notEqual((moved.headers as Record<string, string>).ETag, headers.ETag);
    assert.equal((await look(rt.app, 'b-no-such-batch', headers.ETag)).status, 404);
  });
});
