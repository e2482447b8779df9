/**
 * The chunk result blob: what the map step writes (version 3, the header alone with compact rows
 * and the chunk's input control sums) and what the reduce step reads, including version-2 blobs
 * (no inputs) and version-1 blobs (object rows followed by one billing line per transaction)
 * that were written before and may still be in flight after a deploy.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';

import { billChunk, billTransaction } from '../../../shared/billing/bill';
import { ReportBuilder } from '../../../shared/billing/report';
import { encodeResult, parseResultHeader, readResultHeader } from '../../../shared/billing/result-blob';
import { DEFAULT_TAX_RATES } from '../../../shared/config/tax-rates';
import { NewerFormatError, PermanentError } from '../../../shared/errors';
import { controlSumsOf } from '../../../shared/model/control-totals';
import { generate } from '../../../tools/testkit/generate';
import { expectedReport } from '../../../tools/testkit/oracle';

/** A result blob as versions before 2 wrote it: the v1 header, then a billing line per transaction. */
function v1Blob(batchId: string, chunk: number, txns: ReturnType<typeof generate>): Buffer {
  const bill = billChunk(txns, DEFAULT_TAX_RATES);
  const header = JSON.stringify({ v: 1, batchId, chunk, count: txns.length, partials: bill.partials });
  const lines = txns.map((t) => JSON.stringify(billTransaction(t, DEFAULT_TAX_RATES)));
  return gzipSync(Buffer.from([header, ...lines, ''].join('\n'), 'utf8'));
}

describe('chunk result blob', () => {
  const txns = generate(3_000, 11, 40);

  test('version 3 is one header line with compact rows and inputs, and reads back to the same partials and sums', async () => {
    const bill = billChunk(txns, DEFAULT_TAX_RATES);
    const inputs = controlSumsOf(txns);
    const { body, headerText } = await encodeResult('b-1', 4, bill, inputs);
    const text = gunzipSync(body).toString('utf8');
    assert.equal(text, `${headerText}\n`, 'the header and nothing after it');
    const stored = JSON.parse(headerText) as { v: number; rows: unknown[][]; inputs: unknown[][] };
    assert.equal(stored.v, 3);
    assert.deepEqual(stored.inputs[0], [inputs[0]?.currency, inputs[0]?.type, inputs[0]?.count, inputs[0]?.amount]);
    assert.equal(stored.rows.length, bill.partials.length);
    assert.equal(stored.rows[0]?.length, 6);
    const h = await readResultHeader(body);
    assert.equal(h.batchId, 'b-1');
    assert.equal(h.chunk, 4);
    assert.equal(h.count, 3_000);
    assert.deepEqual(h.partials, bill.partials);
    assert.deepEqual(h.inputs, inputs);
    assert.equal(
      inputs.reduce((n, s) => n + s.count, 0),
      3_000,
    );
    assert.deepEqual(parseResultHeader(headerText), h);
  });

  test('a version-2 header (written before inputs) reads with its partials and no inputs', async () => {
    const bill = billChunk(txns, DEFAULT_TAX_RATES);
    const v3 = JSON.parse((await encodeResult('b-1', 4, bill, controlSumsOf(txns))).headerText) as Record<
      string,
      unknown
    >;
    const v2 = JSON.stringify({ v: 2, batchId: v3.batchId, chunk: v3.chunk, count: v3.count, rows: v3.rows });
    const h = parseResultHeader(v2);
    assert.equal(h.v, 2);
    assert.deepEqual(h.partials, bill.partials);
    assert.equal(h.inputs, undefined);
  });

  test('the same chunk gives the same bytes (a redelivery overwrites with identical content)', async () => {
    const a = await encodeResult('b-1', 0, billChunk(txns, DEFAULT_TAX_RATES), controlSumsOf(txns));
    const b = await encodeResult('b-1', 0, billChunk(txns, DEFAULT_TAX_RATES), controlSumsOf(txns));
    assert.ok(a.body.equals(b.body));
  });

  test('a version-1 blob written before still reads, and folds to the same report as version 2', async () => {
    const old = new ReportBuilder();
    const now = new ReportBuilder();
    for (let i = 0, chunk = 0; i < txns.length; i += 1_000, chunk++) {
      const part = txns.slice(i, i + 1_000);
      const h1 = await readResultHeader(v1Blob('b-2', chunk, part));
      assert.equal(h1.v, 1);
      assert.equal(h1.count, part.length);
      old.add(h1.partials);
      now.add(
        (
          await readResultHeader(
            (await encodeResult('b-2', chunk, billChunk(part, DEFAULT_TAX_RATES), controlSumsOf(part))).body,
          )
        ).partials,
      );
    }
    const expected = expectedReport(txns);
    for (const report of [old.build('b-2'), now.build('b-2')]) {
      assert.equal(report.transactions, expected.transactions);
      assert.deepEqual(report.rows, expected.rows);
      assert.deepEqual(report.totals, expected.totals);
    }
  });

  test('a malformed header or row is a permanent error', () => {
    const bad = [
      'not json',
      '[2]',
      '{"batchId":"b","chunk":0,"count":1,"rows":[]}',
      // A version-3 header without its inputs is damaged: it must not skip the inputs check.
      '{"v":3,"batchId":"b","chunk":0,"count":1,"rows":[]}',
      '{"v":3,"batchId":"b","chunk":0,"count":1,"rows":[],"inputs":[["EUR","charge",1]]}',
      '{"v":3,"batchId":"b","chunk":0,"count":1,"rows":[],"inputs":[["EUR","gift",1,5]]}',
      '{"v":3,"batchId":"b","chunk":0,"count":1,"rows":[],"inputs":[["EUR","charge",1,-5]]}',
      '{"v":2,"batchId":"b","chunk":0,"count":1}',
      '{"v":2,"batchId":"b","chunk":0,"count":1,"rows":[["a","EUR",1,2,0]]}',
      '{"v":2,"batchId":"b","chunk":0,"count":1,"rows":[["a","EUR",1,"2",0,0]]}',
      '{"v":2,"batchId":"b","chunk":0,"count":1,"rows":[["a","EUR",1,2.5,0,0]]}',
      '{"v":2,"batchId":"b","chunk":0,"count":1,"rows":[[1,"EUR",1,2,0,0]]}',
      '{"v":1,"batchId":"b","chunk":0,"count":1,"rows":[]}',
    ];
    for (const text of bad) assert.throws(() => parseResultHeader(text), PermanentError, text);
  });

  test('a newer header is a NewerFormatError (handed back, not poisoned), unless it says version 3 reads it', () => {
    assert.throws(
      () => parseResultHeader('{"v":4,"batchId":"b","chunk":0,"count":1,"rows":[],"inputs":[]}'),
      (e: unknown) => e instanceof NewerFormatError && e.version === 4 && e.newest === 3,
    );
    const h = parseResultHeader(
      '{"v":4,"min":3,"batchId":"b","chunk":0,"count":1,"rows":[["a","EUR",1,5,1,2]],"inputs":[],"x":1}',
    );
    assert.equal(h.v, 3, 'read as the newest version this build knows');
    assert.deepEqual(h.partials[0], {
      account: 'a',
      currency: 'EUR',
      transactions: 1,
      charges: 5,
      refunds: 1,
      net: 4,
      tax: 2,
      total: 6,
    });
  });
});
