/**
 * The bytes of a request or file body: streams, capped (gzip-bomb-safe), and hashed. A body is a
 * function that opens a stream. A file (the sweep's) opens a fresh one each time, so a body too big
 * to keep its chunks in memory is read a second time to cut them; a request's stream is read once
 * (`once`), as it arrives, and ingest keeps what it needs of it.
 */
import { createHash } from 'node:crypto';
import { setImmediate } from 'node:timers/promises';
import { createGunzip } from 'node:zlib';

import { AbortedError, checkAborted, ValidationError } from '../errors';
import { tooLarge } from './ingest-errors';

/** Bytes in order; sync iterables are accepted too (an in-memory body). */
export type ByteSource = AsyncIterable<Buffer> | Iterable<Buffer>;

/** Opens the body; `once`: it can be opened only once (ingest then never reads it again). */
export type BodySource = (() => ByteSource) & { readonly once?: boolean };

function inflatesPast(limit: number): ValidationError {
  return tooLarge(`the body inflates past ${limit} bytes`);
}

/** Inflated bytes per output chunk: fewer, larger hand-offs through the reader chain than zlib's 16 KiB. */
const INFLATE_CHUNK = 64 * 1024;

/**
 * Gunzips with an output cap: a small body that inflates without bound is a gzip bomb. Past the
 * cap (or on an abort) it stops at once: the reader stops pulling, zlib is destroyed, and the
 * feed, which may be waiting for zlib to take more input, is released by the 'close'.
 */
export async function* inflateLimited(
  source: ByteSource,
  maxBytes: number,
  signal?: AbortSignal,
): AsyncGenerator<Buffer> {
  const gunzip = createGunzip({ chunkSize: INFLATE_CHUNK });
  let total = 0;
  // 'drain' never comes once zlib is destroyed: waiting only for it would hang every early stop.
  const writable = (): Promise<void> =>
    new Promise<void>((resolve) => {
      const done = (): void => {
        gunzip.off('drain', done).off('close', done);
        resolve();
      };
      gunzip.on('drain', done).on('close', done);
      if (gunzip.destroyed) done();
    });
  const feed = (async (): Promise<void> => {
    try {
      for await (const chunk of source) {
        if (gunzip.destroyed) return;
        if (!gunzip.write(chunk)) await writable();
      }
      if (!gunzip.destroyed) gunzip.end();
    } catch (e) {
      gunzip.destroy(e as Error);
    }
  })();
  try {
    for await (const out of gunzip as AsyncIterable<Buffer>) {
      checkAborted(signal);
      total += out.length;
      if (total > maxBytes) throw inflatesPast(maxBytes);
      yield out;
    }
  } catch (e) {
    if (e instanceof ValidationError || e instanceof AbortedError) throw e;
    const code = (e as { code?: string }).code ?? '';
    if (code.startsWith('Z_'))
      throw new ValidationError(
        'the body is not valid gzip data: Content-Encoding is gzip but the body does not inflate',
        { code: 'invalid_batch' },
      );
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
    if (total > maxBytes) throw inflatesPast(maxBytes);
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

const SLICE = 64 * 1024;
/**
 * Slices read between two turns of the event loop. Reading an in-memory body is all microtasks,
 * so without a turn nothing else runs until validation ends: not a disconnect (seen as a socket
 * event), not a health probe. 1 MiB of records validates in a few tens of milliseconds.
 */
const SLICES_PER_TURN = 16;

async function* slices(parts: ByteSource, signal: AbortSignal | undefined): AsyncGenerator<Buffer> {
  let n = 0;
  for await (const body of parts) {
    for (let i = 0; i < body.length; i += SLICE) {
      checkAborted(signal);
      yield body.subarray(i, i + SLICE);
      if (++n % SLICES_PER_TURN === 0) await setImmediate();
    }
  }
}

/**
 * A body held in memory (a file, a test), opened as a stream of 64 KiB slices. With `signal`,
 * every slice and every inflated chunk checks it: a client that disconnects stops the work
 * within about a mebibyte of reading.
 */
export function bufferSource(body: Buffer, gzip: boolean, maxInflated: number, signal?: AbortSignal): BodySource {
  return () =>
    gzip ? inflateLimited(slices([body], signal), maxInflated, signal) : limited(slices([body], signal), maxInflated);
}

/** The raw bytes of a stream with a cap; a stream that fails because its client went away is an abort. */
async function* received(
  body: AsyncIterable<Uint8Array>,
  maxBytes: number,
  signal: AbortSignal | undefined,
): AsyncGenerator<Buffer> {
  let total = 0;
  try {
    for await (const part of body) {
      total += part.length;
      if (total > maxBytes) throw tooLarge(`the body exceeds ${maxBytes} bytes`);
      yield Buffer.from(part.buffer, part.byteOffset, part.length);
    }
  } catch (e) {
    // A client that goes away mid-upload ends the request's stream in an error.
    checkAborted(signal);
    throw e;
  }
}

/**
 * A request's body as it arrives (HTTP streams): its bytes are capped at `maxBodyBytes` as sent
 * and at `maxInflated` as parsed, and it can be opened once; a second open is a bug, said as one.
 */
export function streamSource(
  body: AsyncIterable<Uint8Array>,
  limits: { gzip: boolean; maxBodyBytes: number; maxInflated: number },
  signal?: AbortSignal,
): BodySource {
  let opened = false;
  const open = (): ByteSource => {
    if (opened) throw new Error('a request body is read once: nothing may open it a second time');
    opened = true;
    // In slices: a library that holds the body hands it over as one part of up to the cap.
    const bytes = slices(received(body, limits.maxBodyBytes, signal), signal);
    return limits.gzip ? inflateLimited(bytes, limits.maxInflated, signal) : limited(bytes, limits.maxInflated);
  };
  return Object.assign(open, { once: true });
}
