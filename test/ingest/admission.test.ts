/**
 * Admission by memory, in process through the real POST handler on Azurite: a batch the process's
 * memory budget has no room for now is answered 503 with Retry-After before a byte of its body is
 * read, writes nothing, and is accepted when the client comes back once there is room. A file of
 * the timer's sweep asks the same budget, and waits its turn instead.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { HttpRequest } from '@azure/functions';

import { postBatch } from '../../functions/ingest-http';
import { ingestSweep } from '../../functions/ingest-timer';
import type { Report } from '../../shared/billing/report';
import { ingestBytes } from '../../shared/ingest/ingest-memory';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { blobNames } from '../support/inspect';
import { completed, context, pump, report } from '../support/invoke';
import { until } from '../support/poll';
import { line } from '../support/route-calls';
import { testRuntime, useStorage } from '../support/storage';

useStorage();

/** A POST whose body stream counts its reads and, if `held`, sends nothing until released. */
function streamedPost(lines: string[], held: boolean): { req: HttpRequest; reads: () => number; release: () => void } {
  const bytes = new TextEncoder().encode(lines.map((l) => `${l}\n`).join(''));
  let reads = 0;
  let release = (): void => {};
  const gate = held ? new Promise<void>((r) => (release = r)) : Promise.resolve();
  let sent = false;
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        reads++;
        await gate;
        if (sent) return controller.close();
        sent = true;
        controller.enqueue(bytes);
      },
    },
    { highWaterMark: 0 },
  );
  const url = 'http://127.0.0.1/api/batches';
  const headers = {
    'content-type': 'application/x-ndjson',
    'content-length': String(bytes.length),
    'x-functions-key': 'k',
  };
  const nativeRequest = new Request(url, { method: 'POST', headers, body, duplex: 'half' });
  const req = new HttpRequest({ method: 'POST', url, headers, nativeRequest } as ConstructorParameters<
    typeof HttpRequest
  >[0]);
  return { req, reads: () => reads, release: () => release() };
}

const lines = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => line(`${prefix}-${i}`));

describe('admission by memory', () => {
  test('no room now: 503 with Retry-After, no byte read, nothing written; room again: accepted', async () => {
    // 1 MB of instance memory: a budget of 256 KiB.
    const rt = await testRuntime({ PUSHDRAIN_INSTANCE_MEMORY_MB: '1' });
    const first = streamedPost(lines('a', 1_800), true);
    const second = streamedPost(lines('b', 1_800), false);
    const each = ingestBytes(Number(first.req.headers.get('content-length')), false, rt.parts.settings.tuning);
    assert.ok(each < 256 * 1024 && 2 * each > 256 * 1024, `one fits the budget, two do not (${each} bytes each)`);

    const accepting = postBatch(rt.app, first.req, context('postBatch'));
    const before = rt.app.storageTransactions().total ?? 0;
    const refused = await postBatch(rt.app, second.req, context('postBatch'));
    assert.equal(rt.app.storageTransactions().total ?? 0, before, 'the refusal made no Storage request');
    assert.equal(refused.status, 503, JSON.stringify(refused.jsonBody));
    const headers = refused.headers as Record<string, string>;
    const after = Number(headers['Retry-After']);
    assert.ok(after >= 5 && after <= 15, `Retry-After ${headers['Retry-After']}`);
    assert.equal(headers['Content-Type'], 'application/problem+json');
    assert.match((refused.jsonBody as { message: string }).message, /no memory free/);
    assert.equal(second.reads(), 0, 'the refused body was not read');
    assert.equal(rt.app.health().memory.refused, 1);

    first.release();
    assert.equal((await accepting).status, 202);
    assert.equal(rt.app.health().memory.inUseBytes, 0, 'the accepted ingest gave its room back');

    // The client comes back as told: now there is room.
    const again = streamedPost(lines('b', 1_800), false);
    const res = await postBatch(rt.app, again.req, context('postBatch'));
    assert.equal(res.status, 202, JSON.stringify(res.jsonBody));
    assert.equal((res.jsonBody as { transactions: number }).transactions, 1_800);
  });

  test('a body bigger than the whole budget is taken when nothing else is held, and a declared length over the cap is still 413', async () => {
    const rt = await testRuntime({ PUSHDRAIN_INSTANCE_MEMORY_MB: '1', PUSHDRAIN_MAX_BODY_BYTES: '300000' });
    const big = streamedPost(lines('c', 2_600), false);
    assert.ok(ingestBytes(Number(big.req.headers.get('content-length')), false, rt.parts.settings.tuning) > 256 * 1024);
    assert.equal((await postBatch(rt.app, big.req, context('postBatch'))).status, 202);

    const over = streamedPost(lines('d', 1), false);
    over.req.headers.set('content-length', '300001');
    const res = await postBatch(rt.app, over.req, context('postBatch'));
    assert.equal(res.status, 413, JSON.stringify(res.jsonBody));
    assert.equal(over.reads(), 0);
  });

  test('a sweep file waits in line for room: a POST meanwhile is refused, and the file is ingested once room is free', async () => {
    const rt = await testRuntime({ PUSHDRAIN_INSTANCE_MEMORY_MB: '1' });
    const holder = streamedPost(lines('h', 1_800), true);
    const holding = postBatch(rt.app, holder.req, context('postBatch'));
    await until('the first POST admitted and reading', 10_000, () => (holder.reads() > 0 ? true : undefined));
    // 1,500 generated transactions: ~200 KB, which fits the 256 KiB budget alone but not beside the POST.
    const txns = generate(1_500, 41);
    const file = toNdjson(txns);
    assert.ok(ingestBytes(file.length, false, rt.parts.settings.tuning) < 256 * 1024);
    await rt.raw.container('incoming').getBlockBlobClient('day.ndjson').uploadData(file);

    const sweeping = ingestSweep(rt.app, context('ingestSweep'));
    await until('the sweep waiting for memory', 10_000, () => (rt.app.health().memory.waits > 0 ? true : undefined));
    assert.deepEqual(await blobNames(rt.parts, ['incoming', 'archive']), ['incoming/day.ndjson'], 'not read yet');
    // The file keeps its place in line: a POST that comes now is refused, however small.
    const late = streamedPost(lines('l', 1), false);
    assert.equal((await postBatch(rt.app, late.req, context('postBatch'))).status, 503);
    assert.equal(late.reads(), 0);

    holder.release();
    const held = await holding;
    assert.equal(held.status, 202, JSON.stringify(held.jsonBody));
    const [outcome] = await sweeping;
    assert.ok(outcome?.kind === 'ingested', JSON.stringify(outcome));
    assert.equal(rt.app.health().memory.inUseBytes, 0, 'the sweep gave its room back');
    const ids = [(held.jsonBody as { batchId: string }).batchId, outcome.result.batchId];
    for (const id of ids) await pump(rt.app, rt.events, () => completed(rt.observer, id), 60_000);
    const got = (await report(rt.observer, outcome.result.batchId)).jsonBody as Report;
    assert.deepEqual(got.rows, expectedReport(txns).rows);
  });
});
