/**
 * The chunk blob format, shared by ingest (which writes it) and the map step (which reads
 * it): gzip NDJSON of canonical transactions (see canonicalLine), with a sha256 of the
 * compressed bytes carried by the pointer. A corrupt blob is a permanent error: it will not
 * heal on retry.
 */
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzipSync, gzip } from 'node:zlib';

import { PermanentError } from '../errors';
import { canonicalLine, parseCanonical } from './canonical';
import { type Transaction, validateTransaction } from './transaction';

const gzipAsync = promisify(gzip);

/**
 * Inflates a chunk (~280 KB at 2,000 transactions) in 64 KiB steps rather than zlib's default
 * 16 KiB: half the CPU. Larger steps gain little and each decode would hold (and the GC
 * count) that much more memory outside the heap. On this thread: ~0.2 ms, less CPU than the
 * thread pool's hand-offs.
 */
const INFLATE_CHUNK = 64 * 1024;

export interface EncodedChunk {
  index: number;
  count: number;
  body: Buffer;
  sha256: string;
}

export function sha256Hex(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Canonical lines (each a valid transaction's canonicalLine) into a chunk blob. */
export async function encodeChunkLines(index: number, lines: readonly string[]): Promise<EncodedChunk> {
  // join() with a final empty item: one flat string with the trailing newline, no second copy.
  const body = await gzipAsync(Buffer.from([...lines, ''].join('\n'), 'utf8'));
  return { index, count: lines.length, body, sha256: sha256Hex(body) };
}

export function encodeChunk(index: number, txns: readonly Transaction[]): Promise<EncodedChunk> {
  return encodeChunkLines(index, txns.map(canonicalLine));
}

/**
 * A chunk's text, its integrity verified first: a mismatch will not heal on retry. `verified`
 * is false for a blob without a checksum, whose lines must then be validated in full.
 */
export function inflateChunk(body: Buffer, expectedSha256: string | undefined): { text: string; verified: boolean } {
  const verified = expectedSha256 !== undefined;
  if (verified && sha256Hex(body) !== expectedSha256) throw new PermanentError('chunk blob checksum mismatch');
  try {
    return { text: gunzipSync(body, { chunkSize: INFLATE_CHUNK }).toString('utf8'), verified };
  } catch (e) {
    throw new PermanentError('chunk blob is not valid gzip', { cause: e });
  }
}

/**
 * Calls `line(start, end, n)` for each non-empty line of a chunk's text, in place (no array of
 * lines); `n` is the 1-based line number.
 */
export function forEachLine(text: string, line: (start: number, end: number, n: number) => void): void {
  for (let start = 0, n = 1; start < text.length; n++) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    if (end > start) line(start, end, n);
    start = end + 1;
  }
}

/**
 * Inverse of encodeChunk. With a verified sha256, lines in the canonical layout are read by
 * position; anything else (or a blob without a checksum) is parsed and validated in full.
 */
export function decodeChunk(body: Buffer, expectedSha256: string | undefined): Transaction[] {
  const { text, verified } = inflateChunk(body, expectedSha256);
  const out: Transaction[] = [];
  forEachLine(text, (start, end, n) => out.push((verified ? parseCanonical(text, start, end) : undefined) ?? parseLine(text.slice(start, end), n)));
  return out;
}

/** A chunk line read in full: JSON.parse and every schema rule. */
export function parseLine(raw: string, line: number): Transaction {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (e) {
    throw new PermanentError(`chunk blob line ${line} is not JSON`, { cause: e });
  }
  const r = validateTransaction(value, line);
  if ('errors' in r) throw new PermanentError(`chunk blob line ${line} is not a valid transaction`);
  return r.ok;
}
