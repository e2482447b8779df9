/**
 * readBody (functions/ingest-http.ts): the POST body as one Buffer, capped. A body the Functions
 * library holds in memory arrives as one part and is taken as it is (no copy); a streamed body
 * arrives in parts and is joined. Either way the bytes are the client's.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { HttpRequest } from '@azure/functions';

import { readBody } from '../../functions/ingest-http';
import { ValidationError } from '../../shared/errors';

const URL_ = 'http://127.0.0.1:7071/api/batches';

function buffered(body: Buffer): HttpRequest {
  return new HttpRequest({ method: 'POST', url: URL_, body: { bytes: body }, headers: {} });
}

function streamed(parts: Buffer[]): HttpRequest {
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const p of parts) controller.enqueue(new Uint8Array(p));
      controller.close();
    },
  });
  const nativeRequest = new Request(URL_, { method: 'POST', body: stream, duplex: 'half' });
  return new HttpRequest({ method: 'POST', url: URL_, nativeRequest } as ConstructorParameters<typeof HttpRequest>[0]);
}

describe('readBody', () => {
  const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));

  test('a body held in memory (one part) is read whole, byte for byte', async () => {
    const got = await readBody(buffered(bytes), 1_000_000);
    assert.equal(got.length, bytes.length);
    assert.ok(got.equals(bytes));
  });

  test('a streamed body (several parts) is joined in order', async () => {
    const parts = [bytes.subarray(0, 1), bytes.subarray(1, 70_000), bytes.subarray(70_000)];
    const got = await readBody(streamed(parts), 1_000_000);
    assert.ok(got.equals(bytes));
  });

  test('a body past the cap is refused, one part or several', async () => {
    await assert.rejects(
      readBody(buffered(bytes), bytes.length - 1),
      (e) => e instanceof ValidationError && e.code === 'too_large',
    );
    const parts = [bytes.subarray(0, 200_000), bytes.subarray(200_000)];
    await assert.rejects(
      readBody(streamed(parts), 250_000),
      (e) => e instanceof ValidationError && e.code === 'too_large',
    );
  });

  test('an empty body is an empty Buffer', async () => {
    const got = await readBody(new HttpRequest({ method: 'POST', url: URL_, headers: {} }), 10);
    assert.equal(got.length, 0);
  });
});
