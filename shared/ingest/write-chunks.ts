/**
 * Writing a claimed batch's chunk blobs, and the pointer each one gets. Nothing is enqueued
 * here: ingest sends the pointers only once every blob is written.
 */
import type { Manifest } from '../batch/manifest';
import { checkAborted } from '../errors';
import { layout } from '../layout';
import type { WorkPointer } from '../model/chunk-codec';
import type { EntityNames } from '../names';
import type { BlobStore } from '../ports';
import { Pool } from '../util/pool';
import { chunkSource, type Kept, type ValidBody } from './chunk-source';

/** Chunk blobs in flight at once: bounds memory to a couple of chunks beyond the body. */
const WRITE_CONCURRENCY = 2;
const KEPT_WRITE_CONCURRENCY = 8;

/** A chunk's pointer and the input queue it goes to. */
export interface QueuedPointer {
  queue: string;
  pointer: WorkPointer;
}

export interface ChunkWrite {
  blobs: BlobStore;
  names: EntityNames;
  /** The claim: its batch id, chunk size and piece, transaction count and body sha256. */
  manifest: Manifest;
  body: ValidBody;
  /** What validation kept; without it the body is cut again. */
  kept: Kept | undefined;
  signal?: AbortSignal;
}

/** Writes every chunk blob; returns the pointers in chunk order. */
export async function writeChunks(w: ChunkWrite): Promise<QueuedPointer[]> {
  const { batchId, chunkSize, chunkPiece, transactions, traceparent } = w.manifest;
  const pointers: QueuedPointer[] = [];
  // Kept chunks are in memory already: only a cut needs the tight bound.
  const writes = new Pool(w.kept && 'chunks' in w.kept ? KEPT_WRITE_CONCURRENCY : WRITE_CONCURRENCY);
  let counted = 0;
  for await (const encode of chunkSource(w.body, { size: chunkSize, piece: chunkPiece ?? chunkSize }, w.kept)) {
    checkAborted(w.signal);
    await writes.run(async () => {
      const enc = await encode();
      counted += enc.count;
      const chunk = enc.index;
      const ref = layout.chunk(batchId, chunk);
      await w.blobs.write(ref, enc.body, {
        contentType: 'application/x-ndjson',
        contentEncoding: 'gzip',
        // Lets the watchdog rebuild a lost pointer from the blob alone.
        metadata: { sha256: enc.sha256, count: String(enc.count) },
      });
      pointers[chunk] = {
        queue: w.names.inputQueueOf(batchId, chunk),
        pointer: {
          v: 1,
          batchId,
          chunk,
          blob: ref.name,
          count: enc.count,
          sha256: enc.sha256,
          bytes: enc.body.length,
          ...(traceparent !== undefined ? { traceparent } : {}),
        },
      };
    });
  }
  await writes.drain();
  // A second pass proves its bytes by their sha256; this guards the chunking itself.
  if (counted !== transactions) throw new Error(`the chunks hold ${counted} transactions, the batch ${transactions}`);
  const only = pointers.length === 1 ? pointers[0] : undefined;
  if (only) only.pointer.sole = true;
  return pointers;
}
