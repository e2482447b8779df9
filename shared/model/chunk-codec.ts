/**
 * The chunk blob format, shared by ingest (which writes it) and the map step (which reads
 * it): gzip NDJSON of canonical transactions (see canonicalLine), with a sha256 of the
 * compressed bytes carried by the pointer. A corrupt blob is a permanent error: it will not
 * heal on retry.
 */
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';

import { PermanentError } from '../errors';
import { canonicalLine, parseCanonical } from './canonical';
import { type Transaction, validateTransaction } from './transaction';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/**
 * Inflates a chunk (~280 KB at 2,000 transactions) in a few 64 KiB steps rather than many of
 * zlib's default 16 KiB: half the CPU. Larger steps gain little and each decode would hold
 * (and the GC count) that much more memory outside the heap.
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
 * Inverse of encodeChunk, verifying integrity first: a mismatch will not heal on retry. With
 * a verified sha256, lines in the canonical layout are read by position; anything else (or a
 * blob without a checksum) is parsed and validated in full.
 */
export async function decodeChunk(body: Buffer, expectedSha256: string | undefined): Promise<Transaction[]> {
  const verified = expectedSha256 !== undefined;
  if (verified && sha256Hex(body) !== expectedSha256) throw new PermanentError('chunk blob checksum mismatch');
  let text: string;
  try {
    text = (await gunzipAsync(body, { chunkSize: INFLATE_CHUNK })).toString('utf8');
  } catch (e) {
    throw new PermanentError('chunk blob is not valid gzip', { cause: e });
  }
  const out: Transaction[] = [];
  // Lines read in place (no array of lines); a line that is not canonical is sliced and parsed.
  for (let start = 0, line = 1; start < text.length; line++) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const fast = verified && end > start ? parseCanonical(text, start, end) : undefined;
    if (fast) out.push(fast);
    else if (end > start) out.push(parseLine(text.slice(start, end), line));
    start = end + 1;
  }
  return out;
}

/** A chunk line read in full: JSON.parse and every schema rule. */
function parseLine(raw: string, line: number): Transaction {
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
