/**
 * How many transactions go into each chunk of a batch: big chunks for a big batch (each chunk
 * costs the same handful of Storage requests whatever its size), bounded by the parallelism the
 * drains can use, a chunk's memory, and the visibility timeout it must be mapped within.
 * docs/DESIGN.md ("Chunk size") has the figures behind each constant.
 *
 * A chunk is written as gzip members of `piece` lines each (concatenated members are one valid
 * gzip stream): validation cuts and compresses pieces before the batch's size is known, and the
 * chosen chunks are whole runs of them, so a valid body is still read once.
 */

/** Lines per gzip member, and the smallest chunk the rule chooses: the fixed size of earlier versions. */
export const CHUNK_PIECE = 2_000;
/** Chunks each input queue gets at least, so every partition's drain has work and two chunks overlap. */
const CHUNKS_PER_QUEUE = 2;
/** Characters of canonical lines one chunk holds at most: what one map inflates, parses and bills at once. */
export const MAX_CHUNK_CHARS = 4 * 1024 * 1024;
/** Transactions per second one chunk is mapped at on a starved CPU (the slowest measured, docs/DESIGN.md). */
const SLOW_MAP_RATE = 5_000;
/** Share of the visibility timeout a chunk's map may take (a receive holds up to a batch of them). */
const VISIBILITY_SHARE = 0.25;

/** How a batch is cut: `size` transactions per chunk, written as gzip members of `piece` lines. */
export interface ChunkPlan {
  size: number;
  piece: number;
}

/** What the rule needs to know of a validated batch. */
export interface BatchShape {
  transactions: number;
  /** The longest canonical line, in characters. */
  longestLine: number;
}

export interface ChunkRule {
  /** Lines per piece that validation cuts while it reads (before the batch's size is known). */
  readonly piece: number;
  plan(batch: BatchShape): ChunkPlan;
}

export interface ChunkTuning {
  /** PUSHDRAIN_CHUNK_SIZE: the largest chunk, in transactions. */
  chunkSize: number;
  partitions: number;
  visibilityTimeoutSeconds: number;
}

/** Every chunk the same size: what a test or tool that wants an exact cut asks for. */
export function fixedChunks(size: number): ChunkRule {
  return { piece: size, plan: () => ({ size, piece: size }) };
}

/**
 * The rule: `min(cap, max(CHUNK_PIECE, n ÷ (CHUNKS_PER_QUEUE × partitions)), chars bound,
 * visibility bound)`, in whole pieces when above one piece.
 */
export function chunkRule(t: ChunkTuning): ChunkRule {
  const piece = Math.min(CHUNK_PIECE, t.chunkSize);
  const visible = Math.floor(t.visibilityTimeoutSeconds * SLOW_MAP_RATE * VISIBILITY_SHARE);
  return {
    piece,
    plan({ transactions, longestLine }: BatchShape): ChunkPlan {
      const parallel = Math.floor(transactions / (CHUNKS_PER_QUEUE * t.partitions));
      // +1: the newline each line carries in the blob.
      const chars = Math.floor(MAX_CHUNK_CHARS / (Math.max(0, longestLine) + 1));
      let size = Math.max(1, Math.min(t.chunkSize, Math.max(CHUNK_PIECE, parallel), chars, visible));
      // Above one piece, whole pieces: the chunks are then runs of what validation kept.
      if (size > piece) size -= size % piece;
      return { size, piece: Math.min(piece, size) };
    },
  };
}
