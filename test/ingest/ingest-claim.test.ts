/**
 * The ingest claim under Storage faults, through the real handlers, real Azurite and the
 * fault proxy: a create whose response was lost is still ours; a claim left behind by a
 * request that could not clean up answers 409 with Retry-After until its heartbeat is stale,
 * then the retry takes it over; the timer sweep leaves such a file for later, never rejects it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { ingestSweep } from '../../functions/ingest-timer';
import type { ManifestStore } from '../../shared/batch/manifest-store';
import type { Report } from '../../shared/billing/report';
import { STALE_INGEST_MS, startHeartbeat } from '../../shared/ingest/claim';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { movableClock } from '../support/clock';
import { blobNames } from '../support/inspect';
import { completed, context, post, pump, report } from '../support/invoke';
import { testRuntime, useProxiedStorage } from '../support/storage';

const storage = useProxiedStorage();

const manifestWrite = { service: 'blob', method: 'PUT', path: /\/manifest\.json$/ } as const;
const queueSend = { service: 'queue', method: 'POST', path: /\/messages$/ } as const;

/**
 * Fails every pointer send and every manifest write after the claim's create: the ingest fails
 * part-way and cannot mark its claim abandoned, as if its host had died mid-request.
 */
function strandNextClaim(): void {
  storage.proxy.inject('status500', { times: 1_000_000, match: queueSend });
  storage.proxy.inject('status500', { times: 1_000_000, skip: 1, match: manifestWrite });
}

describe('ingest claim', () => {
  test('a manifest create applied but answered by a dropped connection: the request still succeeds', async () => {
    const { app, events, observer } = await testRuntime({
      StorageConnection: storage.connectionString,
      PUSHDRAIN_CHUNK_SIZE: '100',
    });
    const drop = storage.proxy.inject('dropAfterApply', { times: 1, match: manifestWrite });
    const txns = generate(400, 71, 20);
    const res = await post(app, toNdjson(txns), { 'idempotency-key': 'lost-create-1' });
    assert.equal(drop.hits, 1, 'the create was applied and its response dropped');
    assert.equal(res.status, 202, JSON.stringify(res.jsonBody));
    const { batchId, chunks } = res.jsonBody as { batchId: string; chunks: number };
    assert.equal(chunks, 4);
    await pump(app, events, () => completed(observer, batchId), 60_000);
    assert.deepEqual(((await report(observer, batchId)).jsonBody as Report).totals, expectedReport(txns).totals);
  });

  test('a stranded claim answers 409 with Retry-After while fresh, and is taken over once stale', async () => {
    const time = movableClock();
    const { app, events, observer, observerParts } = await testRuntime(
      { StorageConnection: storage.connectionString, PUSHDRAIN_CHUNK_SIZE: '100' },
      { clock: time.clock },
    );
    const txns = generate(300, 72, 20);
    const body = toNdjson(txns);
    strandNextClaim();
    const first = await post(app, body, { 'idempotency-key': 'stranded-1' });
    assert.equal(first.status, 503);
    storage.proxy.clear();
    const manifests = (await blobNames(observerParts, ['batches'])).filter((n) => n.endsWith('manifest.json'));
    assert.equal(manifests.length, 1);
    const batchId = manifests[0]!.split('/')[1]!;
    assert.equal(
      (await observerParts.manifests.read(batchId))!.manifest.state,
      'ingesting',
      'the failed request could not release its claim',
    );

    const busy = await post(app, body, { 'idempotency-key': 'stranded-1' });
    assert.equal(busy.status, 409);
    assert.equal((busy.jsonBody as { error: string }).error, 'ingest_in_progress');
    const retryAfter = Number((busy.headers as Record<string, string>)['Retry-After']);
    assert.ok(retryAfter >= 1 && retryAfter <= 5, `Retry-After: ${retryAfter}`);

    time.advance(STALE_INGEST_MS + 1_000);
    const retry = await post(app, body, { 'idempotency-key': 'stranded-1' });
    assert.equal(retry.status, 202, JSON.stringify(retry.jsonBody));
    assert.equal((retry.jsonBody as { batchId: string }).batchId, batchId);
    await pump(app, events, () => completed(observer, batchId), 60_000);
    assert.deepEqual(((await report(observer, batchId)).jsonBody as Report).totals, expectedReport(txns).totals);
  });

  test('PUSHDRAIN_INGEST_CLAIM_STALE_SECONDS sets the window: busy inside it, taken over past it', async () => {
    const time = movableClock();
    const { app, events, observer, observerParts } = await testRuntime(
      {
        StorageConnection: storage.connectionString,
        PUSHDRAIN_CHUNK_SIZE: '100',
        PUSHDRAIN_INGEST_CLAIM_STALE_SECONDS: '10',
      },
      { clock: time.clock },
    );
    const txns = generate(200, 74, 20);
    const body = toNdjson(txns);
    strandNextClaim();
    assert.equal((await post(app, body, { 'idempotency-key': 'stranded-10s' })).status, 503);
    storage.proxy.clear();
    const name = (await blobNames(observerParts, ['batches'])).find((n) => n.endsWith('manifest.json'))!;
    const stranded = (await observerParts.manifests.read(name.split('/')[1]!))!.manifest;
    const aliveAt = Date.parse(stranded.aliveAt ?? stranded.submittedAt);
    // Ages measured from the claim's last sign of life; the SDK's retries of the failed writes took
    // real time, so the clock is set against the claim, with seconds of margin either side.
    const ageTo = (ms: number): void => time.advance(aliveAt + ms - time.clock.now());

    ageTo(7_000);
    const busy = await post(app, body, { 'idempotency-key': 'stranded-10s' });
    assert.equal(busy.status, 409, 'a claim 7 s old is alive with a 10 s window');
    const retryAfter = Number((busy.headers as Record<string, string>)['Retry-After']);
    assert.ok(retryAfter >= 1 && retryAfter <= 3, `Retry-After: the rest of the window (${retryAfter})`);

    ageTo(13_000); // stale with a 10 s window, alive with the default 30 s
    const retry = await post(app, body, { 'idempotency-key': 'stranded-10s' });
    assert.equal(retry.status, 202, JSON.stringify(retry.jsonBody));
    const { batchId } = retry.jsonBody as { batchId: string };
    assert.equal(batchId, stranded.batchId, 'the retry took the stranded claim over');
    await pump(app, events, () => completed(observer, batchId), 60_000);
    assert.deepEqual(((await report(observer, batchId)).jsonBody as Report).totals, expectedReport(txns).totals);
  });

  test('the sweep leaves a file whose claim is in progress for a later run, then ingests it', async () => {
    const time = movableClock();
    const { app, raw, observerParts } = await testRuntime(
      { StorageConnection: storage.connectionString, PUSHDRAIN_CHUNK_SIZE: '100' },
      { clock: time.clock },
    );
    await raw
      .container('incoming')
      .getBlockBlobClient('day-1.ndjson')
      .uploadData(toNdjson(generate(150, 73)));
    strandNextClaim();
    const [failed] = await ingestSweep(app, context('ingestSweep'));
    assert.equal(failed?.kind, 'retry-later');
    storage.proxy.clear();
    const [busy] = await ingestSweep(app, context('ingestSweep'));
    assert.equal(busy?.kind, 'retry-later', `a claim in progress is not the file's fault: ${JSON.stringify(busy)}`);
    assert.deepEqual(await blobNames(observerParts, ['rejected']), []);
    time.advance(STALE_INGEST_MS + 1_000);
    const [done] = await ingestSweep(app, context('ingestSweep'));
    assert.equal(done?.kind, 'ingested', JSON.stringify(done));
    assert.deepEqual(await blobNames(observerParts, ['archive']), ['archive/day-1.ndjson']);
  });

  test('the heartbeat refreshes only its own claim, and writes nothing once stopped', async () => {
    const { parts, observerParts } = await testRuntime();
    const store = parts.manifests;
    const claim = (await testClaim(store, 'b-heartbeat-own', 'mine'))!;
    const other = (await testClaim(store, 'b-heartbeat-other', 'theirs'))!;
    const beat = startHeartbeat({ store, claim, now: () => Date.now(), warn: () => {}, intervalMs: 30 });
    const foreign = startHeartbeat({
      store,
      claim: { ...other, attempt: 'mine' },
      now: () => Date.now(),
      warn: () => {},
      intervalMs: 30,
    });
    const read = async (id: string) => (await observerParts.manifests.read(id))!;
    for (let i = 0; i < 100 && (await read('b-heartbeat-own')).manifest.aliveAt === undefined; i++)
      await new Promise((r) => setTimeout(r, 20));
    await beat.stop();
    await foreign.stop();
    const stopped = await read('b-heartbeat-own');
    assert.ok(stopped.manifest.aliveAt !== undefined, 'the claim was refreshed');
    assert.equal(
      (await read('b-heartbeat-other')).manifest.aliveAt,
      undefined,
      "another request's claim was not touched",
    );
    await new Promise((r) => setTimeout(r, 150));
    assert.equal((await read('b-heartbeat-own')).etag, stopped.etag, 'no write after stop()');
  });
});

async function testClaim(store: ManifestStore, batchId: string, attempt: string) {
  const m = {
    v: 1 as const,
    batchId,
    state: 'ingesting' as const,
    source: 'http' as const,
    attempt,
    bodySha256: 'x',
    submittedAt: new Date().toISOString(),
    transactions: 1,
    chunkSize: 1,
    chunks: 0,
    queues: [],
    notification: 'pending' as const,
    done: [],
    failed: [],
  };
  return (await store.create(m)) === undefined ? undefined : m;
}
