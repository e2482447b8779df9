/**
 * A body read once (a request's stream) validates exactly as one read again does: the duplicate-id
 * rule confirms its candidates from the pieces validation kept instead of the body, problems or not,
 * and a body whose pieces pass the keeping bound is refused, since it has no second pass.
 */
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, test } from 'node:test';

import { ValidationError } from '../../../shared/errors';
import { type BodySource, bufferSource, streamSource } from '../../../shared/ingest/body';
import { validateBody } from '../../../shared/ingest/validate-body';
import { generate, toNdjson } from '../../../tools/testkit/generate';

/** The body as a request's stream would bring it: in parts of a few kilobytes. */
function streamOf(body: Buffer): BodySource {
  const parts: Buffer[] = [];
  for (let i = 0; i < body.length; i += 7_777) parts.push(body.subarray(i, i + 7_777));
  return streamSource(Readable.from(parts), { gzip: false, maxBodyBytes: 1e9, maxInflated: 1e9 });
}

const chunking = { size: 100, maxBytes: 64 * 1024 * 1024 };

async function outcome(open: BodySource): Promise<unknown> {
  try {
    const s = await validateBody(open, 'ndjson', chunking);
    return { ...s, chunks: s.chunks?.map((c) => c.sha256) };
  } catch (e) {
    assert.ok(e instanceof ValidationError, String(e));
    return { message: e.message, code: e.code, details: e.details };
  }
}

describe('a body read once', () => {
  const txns = generate(1_000, 5, 40);
  const lines = txns.map((t) => JSON.stringify(t));

  test('a valid body: the same summary and the same kept pieces as a body read again', async () => {
    const body = toNdjson(txns);
    const once = await outcome(streamOf(body));
    assert.deepEqual(once, await outcome(bufferSource(body, false, 1e9)));
    assert.equal((once as { chunks: string[] }).chunks.length, 10);
  });

  test('duplicate ids across pieces, beside other problems: the same details, each naming its first line', async () => {
    const mixed = [...lines];
    // Repeats of ids first seen in pieces 0, 3 and 9, a record that is no transaction between them,
    // and a blank line, which shifts lines against the valid records' places.
    mixed[450] = lines[3]!;
    mixed[999] = lines[320]!;
    mixed[700] = '{"id":"x","amount":"not a number"}';
    mixed.splice(200, 0, '');
    mixed.push(lines[905]!, lines[3]!);
    const body = Buffer.from(mixed.join('\n'));
    const once = (await outcome(streamOf(body))) as { details: { line: number; message: string }[] };
    assert.deepEqual(once, await outcome(bufferSource(body, false, 1e9)));
    const duplicates = once.details.filter((d) => d.message.startsWith('duplicate id'));
    assert.deepEqual(
      duplicates.map((d) => [d.line, d.message]),
      [
        [452, 'duplicate id (first seen at line 4)'],
        [1001, 'duplicate id (first seen at line 322)'],
        [1002, 'duplicate id (first seen at line 907)'],
        [1003, 'duplicate id (first seen at line 4)'],
      ],
    );
  });

  test('one id repeated 180,000 times: every repeat named, read once or again, without a stack or time blow-up', async () => {
    const same = JSON.stringify({ ...txns[0], id: 'same' });
    const body = Buffer.from(`${Array.from({ length: 180_000 }, () => same).join('\n')}\n`);
    const once = (await outcome(streamOf(body))) as { message: string; details: { line: number; message: string }[] };
    assert.deepEqual(once, await outcome(bufferSource(body, false, 1e9)));
    assert.match(once.message, /179999 problems/);
    assert.deepEqual(once.details[0], { line: 2, field: 'id', message: 'duplicate id (first seen at line 1)' });
  });

  test('pieces past the keeping bound: refused as too large, where a body read again is cut in a second pass', async () => {
    const body = toNdjson(txns);
    const small = { size: 100, maxBytes: 2_000 };
    await assert.rejects(
      validateBody(streamOf(body), 'ndjson', small),
      (e) => e instanceof ValidationError && e.code === 'too_large' && /smaller batches/.test(e.message),
    );
    const again = await validateBody(bufferSource(body, false, 1e9), 'ndjson', small);
    assert.equal(again.transactions, 1_000);
    assert.equal(again.chunks, undefined, 'nothing kept: ingest reads it again');
    await assert.rejects(validateBody(streamOf(body), 'ndjson'), /pieces kept/);
  });
});
