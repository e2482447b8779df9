/**
 * The chunk blobs ingest writes: the ones validation kept; for a take-over that inherits another
 * chunk size, cut again from the kept pieces; past validation's memory bound, cut in a second
 * pass over the body.
 */
import { encodeChunkLines, type EncodedChunk } from '../model/chunk-codec';
import { type BodySource, hashing } from './body';
import { keptLines } from './chunk-keeper';
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

/** What validation kept of the body: its chunks as the claim cuts them, else its pieces (another cut). */
export type Kept = { chunks: EncodedChunk[] } | { pieces: EncodedChunk[] };

/** Each chunk as a function that encodes it (kept chunks are encoded already), in order. */
export async function* chunkSource(
  body: ValidBody,
  plan: ChunkPlan,
  kept: Kept | undefined,
): AsyncGenerator<() => Promise<EncodedChunk>> {
  if (kept && 'chunks' in kept) {
    for (const enc of kept.chunks) yield () => Promise.resolve(enc);
    return;
  }
  let index = 0;
  for await (const lines of kept ? recut(kept.pieces, plan.size) : chunkBody(body, plan.size)) {
    const chunk = index++;
    yield () => encodeChunkLines(chunk, lines, plan.piece);
  }
}

/** Kept pieces cut again into chunks of `size` lines: a take-over's cut, without the body. */
async function* recut(pieces: readonly EncodedChunk[], size: number): AsyncGenerator<string[]> {
  let chunk: string[] = [];
  for await (const lines of keptLines(pieces)) {
    for (const line of lines) {
      chunk.push(line);
      if (chunk.length === size) {
        yield chunk;
        chunk = [];
      }
    }
  }
  if (chunk.length > 0) yield chunk;
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
