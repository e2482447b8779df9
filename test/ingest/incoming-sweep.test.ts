/** The timer path: files dropped in incoming/ are ingested like HTTP bodies, then archived or rejected. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';

import { ingestSweep } from '../../functions/ingest-timer';
import type { Report } from '../../shared/billing/report';
import { generate, toNdjson } from '../../tools/testkit/generate';
import { expectedReport } from '../../tools/testkit/oracle';
import { blobNames, totalQueued } from '../support/inspect';
import { completed, context, pump, report } from '../support/invoke';
import { testRuntime, useStorage } from '../support/storage';

useStorage();

describe('incoming/ sweep', () => {
  test('NDJSON.gz and JSON files are ingested, processed, and archived; a bad file is rejected with a report', async () => {
    const { app, parts, events, observer, raw } = await testRuntime({ PUSHDRAIN_CHUNK_SIZE: '100' });
    const a = generate(700, 31);
    const b = generate(300, 32);
    const incoming = raw.container('incoming');
    await incoming.getBlockBlobClient('day-1.ndjson.gz').uploadData(gzipSync(toNdjson(a)));
    await incoming.getBlockBlobClient('day-2.json').uploadData(Buffer.from(JSON.stringify(b)));
    await incoming.getBlockBlobClient('broken.ndjson').uploadData(Buffer.from('{"id":"x"}\n'));
    await incoming.getBlockBlobClient('notes.txt').uploadData(Buffer.from('hello'));

    const outcomes = await ingestSweep(app, context('ingestSweep'));
    const kinds = Object.fromEntries(outcomes.map((o) => [o.name, o.kind]));
    assert.deepEqual(kinds, {
      'broken.ndjson': 'rejected',
      'day-1.ndjson.gz': 'ingested',
      'day-2.json': 'ingested',
      'notes.txt': 'rejected',
    });
    const all = await blobNames(parts, ['incoming', 'archive', 'rejected']);
    assert.deepEqual(all, [
      'archive/day-1.ndjson.gz',
      'archive/day-2.json',
      'rejected/broken.ndjson',
      'rejected/broken.ndjson.error.json',
      'rejected/notes.txt',
      'rejected/notes.txt.error.json',
    ]);
    const errorReport = JSON.parse(
      (await raw.container('rejected').getBlockBlobClient('broken.ndjson.error.json').downloadToBuffer()).toString(),
    ) as { details: { field: string }[] };
    assert.ok(errorReport.details.some((d) => d.field === 'account'));

    for (const [o, txns] of [
      [outcomes.find((x) => x.name === 'day-1.ndjson.gz'), a],
      [outcomes.find((x) => x.name === 'day-2.json'), b],
    ] as const) {
      assert.ok(o?.kind === 'ingested');
      const id = o.result.batchId;
      await pump(app, events, () => completed(observer, id), 60_000);
      const got = (await report(observer, id)).jsonBody as Report;
      assert.deepEqual(got.rows, expectedReport(txns).rows);
    }
    // Nothing left to sweep, nothing left queued.
    assert.deepEqual(await ingestSweep(app, context('ingestSweep')), []);
    assert.equal(await totalQueued(parts), 0);
  });

  test('a rejected file enqueues nothing', async () => {
    const { app, parts, events, raw } = await testRuntime();
    await raw.container('incoming').getBlockBlobClient('bad.json').uploadData(Buffer.from('[{"id":1}]'));
    const [o] = await ingestSweep(app, context('ingestSweep'));
    assert.equal(o?.kind, 'rejected');
    assert.equal(await totalQueued(parts), 0);
    assert.equal(events.all.length, 0);
    assert.deepEqual(await blobNames(parts, ['work', 'batches']), []);
  });
});
