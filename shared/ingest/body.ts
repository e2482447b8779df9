/**
 * Request and file bodies as re-openable byte streams. Validation reads the body once and
 * writing reads it again, so a body is a function that opens a fresh stream each time.
 */
import { createHash } from 'node:crypto';
import { createGunzip } from 'node:zlib';

import { ValidationError } from '../errors';
import type { ByteSource } from './records';

export type BodySource = () => ByteSource;

function tooLarge(limit: number): ValidationError {
  return new ValidationError(`the body inflates past ${limit} bytes`, 413, 'too_large');
}

/** Gunzips with an output cap: a small body that inflates without bound is a gzip bomb. */
export async function* inflateLimited(source: ByteSource, maxBytes: number): AsyncGenerator<Buffer> {
  const gunzip = createGunzip();
  let total = 0;
  const feed = (async (): Promise<void> => {
    try {
      for await (const chunk of source) {
        if (!gunzip.write(chunk)) await new Promise<void>((r) => gunzip.once('drain', r));
        if (gunzip.destroyed) return;
      }
      gunzip.end();
    } catch (e) {
      gunzip.destroy(e as Error);
    }
  })();
  try {
    for await (const out of gunzip as AsyncIterable<Buffer>) {
      total += out.length;
      if (total > maxBytes) throw tooLarge(maxBytes);
      yield out;
    }
  } catch (e) {
    if (e instanceof ValidationError) throw e;
    const code = (e as { code?: string }).code ?? '';
    if (code.startsWith('Z_')) throw new ValidationError('the body is not valid gzip data', 400, 'invalid_batch', [{ line: 0, field: '', message: 'Content-Encoding is gzip but the body does not inflate' }]);
    throw e;
  } finally {
    gunzip.destroy();
    await feed;
  }
}

/** Caps a plain stream too, so both encodings share one limit on what is parsed. */
export async function* limited(source: ByteSource, maxBytes: number): AsyncGenerator<Buffer> {
  let total = 0;
  for await (const chunk of source) {
    total += chunk.length;
    if (total > maxBytes) throw tooLarge(maxBytes);
    yield chunk;
  }
}

/** Passes bytes through while hashing them; the digest is ready when the stream ends. */
export function hashing(source: ByteSource): { stream: AsyncGenerator<Buffer>; digest: () => string } {
  const h = createHash('sha256');
  let done: string | undefined;
  async function* run(): AsyncGenerator<Buffer> {
    for await (const chunk of source) {
      h.update(chunk);
      yield chunk;
    }
    done = h.digest('hex');
  }
  return {
    stream: run(),
    digest: () => {
      if (done === undefined) throw new Error('hashing: stream not fully read');
      return done;
    },
  };
}

/** A body held in memory (an HTTP request), opened as a stream of 64 KiB slices. */
export function bufferSource(body: Buffer, gzip: boolean, maxInflated: number): BodySource {
  const slices = function* (): Generator<Buffer> {
    for (let i = 0; i < body.length; i += 65536) yield body.subarray(i, i + 65536);
  };
  return () => (gzip ? inflateLimited(slices(), maxInflated) : limited(slices(), maxInflated));
}
