/**
 * streamSource (shared/ingest/body.ts): a request's body as ingest reads it, once, as it arrives.
 * Whether the Functions library holds the body (one part) or streams it (several), the bytes are
 * the client's, capped as sent and as inflated, and a second open is refused.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';

import { HttpRequest } from '@azure/functions';

import { AbortedError, ValidationError } from '../../shared/errors';
import { type ByteSource, streamSource } from '../../shared/ingest/body';

const URL_ = 'http://127.0.0.1:7071/api/batches';

function buffered(body: Buffer): HttpRequest {
  return new HttpRequest({ method: 'POST', url: URL_, body: { bytes: body }, headers: {} });
}

function streamed(parts: Buffer[], fail?: Error): HttpRequest {
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const p of parts) controller.enqueue(new Uint8Array(p));
      if (fail) controller.error(fail);
      else controller.close();
    },
  });
  const nativeRequest = new Request(URL_, { method: 'POST', body: stream, duplex: 'half' });
  return new HttpRequest({ method: 'POST', url: URL_, nativeRequest } as ConstructorParameters<typeof HttpRequest>[0]);
}

const bodyOf = (req: HttpRequest): AsyncIterable<Uint8Array> => req.body as unknown as AsyncIterable<Uint8Array>;

async function all(source: ByteSource): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const p of source) parts.push(p);
  return Buffer.concat(parts);
}

const limits = { gzip: false, maxBodyBytes: 1_000_000, maxInflated: 1_000_000 };

describe('streamSource: a request body read once', () => {
  const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));

  test('a body held in memory (one part) and a streamed one (several) read byte for byte', async () => {
    assert.ok((await all(streamSource(bodyOf(buffered(bytes)), limits)())).equals(bytes));
    const parts = [bytes.subarray(0, 1), bytes.subarray(1, 70_000), bytes.subarray(70_000)];
    assert.ok((await all(streamSource(bodyOf(streamed(parts)), limits)())).equals(bytes));
  });

  test('it opens once: a second open is refused, not an empty body', async () => {
    const open = streamSource(bodyOf(buffered(bytes)), limits);
    assert.equal(open.once, true);
    await all(open());
    assert.throws(() => open(), /read once/);
  });

  test('a body past the cap as sent is refused, one part or several, and so is one that inflates past its cap', async () => {
    const tooLarge = (e: unknown): boolean => e instanceof ValidationError && e.code === 'too_large';
    await assert.rejects(all(streamSource(bodyOf(buffered(bytes)), { ...limits, maxBodyBytes: 299_999 })()), tooLarge);
    const parts = [bytes.subarray(0, 200_000), bytes.subarray(200_000)];
    await assert.rejects(all(streamSource(bodyOf(streamed(parts)), { ...limits, maxBodyBytes: 250_000 })()), tooLarge);
    // 300 kB of zeros is a few hundred bytes gzipped: the cap as sent passes, the inflated one stops it.
    const bomb = gzipSync(Buffer.alloc(300_000));
    await assert.rejects(
      all(streamSource(bodyOf(buffered(bomb)), { gzip: true, maxBodyBytes: 10_000, maxInflated: 100_000 })()),
      tooLarge,
    );
    const inflated = await all(streamSource(bodyOf(buffered(bomb)), { ...limits, gzip: true })());
    assert.equal(inflated.length, 300_000);
  });

  test('a stream that fails because its client went away is an abort; without one, the failure as it is', async () => {
    const gone = new AbortController();
    gone.abort();
    const cut = (): HttpRequest => streamed([bytes.subarray(0, 1000)], new Error('socket hang up'));
    await assert.rejects(all(streamSource(bodyOf(cut()), limits, gone.signal)()), AbortedError);
    await assert.rejects(all(streamSource(bodyOf(cut()), limits)()), /socket hang up/);
  });
});
