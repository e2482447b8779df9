/**
 * The chunk blobs ingest writes: the ones validation kept, or, past its memory bound (or for
 * a take-over that inherits another chunk size), cut in a second pass over the body.
 */
import { encodeChunkLines, type EncodedChunk } from '../model/chunk-codec';
import { type BodySource, hashing } from './body';
import type { ChunkPlan } from './chunk-size';
import { bodyChanged } from './ingest-errors';
import { type BodyFormat, readRecords } from './records';
import { rereadRecord } from './reread-record';

/** A body that has validated, and the sha256 of the bytes that did. */
export interface ValidBody {
  open: BodySource;
  format: BodyFormat;
  sha256: string;
}

/** Each chunk as a function that encodes it (kept chunks are encoded already), in order. */
export async function* chunkSource(
  body: ValidBody,
  plan: ChunkPlan,
  kept: EncodedChunk[] | undefined,
): AsyncGenerator<() => Promise<EncodedChunk>> {
  if (kept) {
    for (const enc of kept) yield () => Promise.resolve(enc);
    return;
  }
  let index = 0;
  for await (const lines of chunkBody(body, plan.size)) {
    const chunk = index++;
    yield () => encodeChunkLines(chunk, lines, plan.piece);
  }
}

/**
 * The second pass: the body cut into chunks of canonical lines. It re-reads bytes the rules
 * have accepted, so it only reads records, and checks at the end that the bytes hash as the
 * validated ones did; ingest enqueues no pointer before that check.
 */
export async function* chunkBody(body: ValidBody, size: number): AsyncGenerator<string[]> {
  let chunk: string[] = [];
  const { stream, digest } = hashing(body.open());
  for await (const rec of readRecords(stream, body.format)) {
    chunk.push(rereadRecord(rec).canonical);
    if (chunk.length === size) {
      yield chunk;
      chunk = [];
    }
  }
  if (digest() !== body.sha256) throw bodyChanged('its sha256 differs from the validated body');
  if (chunk.length > 0) yield chunk;
}
