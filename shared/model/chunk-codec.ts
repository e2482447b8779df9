/**
 * The chunk blob format, shared by ingest (which writes it) and the map step (which reads
 * it): gzip NDJSON of canonical transactions (see canonicalLine), with a sha256 of the
 * compressed bytes carried by the pointer. A corrupt blob is a permanent error: it will not
 * heal on retry. Below it, the pointers themselves: the queue messages that name a chunk or a
 * chunk's result.
 */
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';

import { PermanentError } from '../errors';
import { isValidBatchId, layout } from '../layout';
import { cpuTurn } from '../util/cpu-turn';
import { canonicalLine, parseCanonical } from './canonical-line';
import { FORMATS, type FormatVersions, readableVersion } from './format-version';
import type { Transaction } from './transaction';
import { validateTransaction } from './validate-transaction';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/**
 * Inflates a chunk (~280 KB per 2,000 transactions, ~2.8 MB at the default 20,000) in 1 MiB
 * steps, and deflates each piece in 64 KiB steps (its ~40 KB of output in one), rather than in
 * zlib's default 16 KiB. Every step is a round trip between the main thread and a thread-pool
 * thread; on a busy instance each wake-up of the pool thread can preempt the main thread, which
 * the profile showed as `write` (zlib's hand-off): 0.5 s per 1,000,000 transactions at 16 and
 * 64 KiB steps, ~45 of them per chunk. The bytes written are the same at any step size, so
 * checksums of chunks already stored still hold.
 */
const INFLATE_CHUNK = 1024 * 1024;
const DEFLATE_CHUNK = 64 * 1024;

export interface EncodedChunk {
  index: number;
  count: number;
  body: Buffer;
  sha256: string;
}

function sha256Hex(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * Canonical lines (each a valid transaction's canonicalLine) into a chunk blob: one gzip member
 * per `piece` lines (by default one for all), concatenated, which gunzip reads as one stream.
 */
export async function encodeChunkLines(
  index: number,
  lines: readonly string[],
  piece = lines.length,
): Promise<EncodedChunk> {
  if (piece >= lines.length) {
    // join() with a final empty item: one flat string with the trailing newline, no second copy.
    const body = await gzipAsync(Buffer.from([...lines, ''].join('\n'), 'utf8'), { chunkSize: DEFLATE_CHUNK });
    return { index, count: lines.length, body, sha256: sha256Hex(body) };
  }
  const members: EncodedChunk[] = [];
  for (let at = 0; at < lines.length; at += piece)
    members.push(await encodeChunkLines(index, lines.slice(at, at + piece)));
  return joinPieces(index, members);
}

/** Pieces (chunk blobs of consecutive lines) as one chunk blob: the same bytes encodeChunkLines gives. */
export function joinPieces(index: number, pieces: readonly EncodedChunk[]): EncodedChunk {
  if (pieces.length === 1) return { ...(pieces[0] as EncodedChunk), index };
  const body = Buffer.concat(pieces.map((p) => p.body));
  return { index, count: pieces.reduce((n, p) => n + p.count, 0), body, sha256: sha256Hex(body) };
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
  // The parse is the first CPU-heavy step of a chunk: one at a time per loop turn (timers between).
  await cpuTurn();
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

/*
 * Queue messages are pointers (claim checks): a few hundred bytes naming a blob, never the
 * work itself. A pointer that does not parse can never succeed, so it is a PermanentError.
 */
/** On queue `work-{p}`: one chunk of transactions to bill. */
export interface WorkPointer {
  v: 1;
  batchId: string;
  chunk: number;
  /** Blob name in the work container: `{batchId}/{chunk}.ndjson.gz`. */
  blob: string;
  count: number;
  sha256: string;
  bytes: number;
  /** W3C trace context of the batch (its ingest span): the chunk's map span is its child. */
  traceparent?: string;
  /**
   * The batch's only chunk: the map step folds its result into the manifest itself, with no
   * results-queue round trip (nothing to coalesce). A hint only: the fold is the same either way.
   */
  sole?: true;
}

/** On queue `results`: one billed chunk to fold into its batch. */
export interface ResultPointer {
  v: 1;
  batchId: string;
  chunk: number;
  /** Blob name in the results container: `{batchId}/{chunk}`. */
  blob: string;
  count: number;
  /** W3C trace context of the chunk's map span: its reduce span is that span's child. */
  traceparent?: string;
  /** When the map step ended (epoch ms) and how long it took: the batch's timeline (batch/timeline.ts). */
  billedAt?: number;
  mapMs?: number;
}

/** The pointer to a billed chunk (count is informational: the fold reads the result's own header). */
export function resultPointer({
  batchId,
  chunk,
  count,
  traceparent,
  billed,
}: {
  batchId: string;
  chunk: number;
  count: number;
  traceparent?: string | undefined;
  billed?: { billedAt: number; mapMs: number };
}): ResultPointer {
  return {
    v: 1,
    batchId,
    chunk,
    blob: layout.result(batchId, chunk).name,
    count,
    ...(traceparent !== undefined ? { traceparent } : {}),
    ...(billed ? { billedAt: billed.billedAt, mapMs: billed.mapMs } : {}),
  };
}

function parseCommon(text: string, format: FormatVersions): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new PermanentError('pointer message is not JSON');
  }
  if (typeof v !== 'object' || v === null) throw new PermanentError('pointer message is not an object');
  const o = v as Record<string, unknown>;
  readableVersion(format, o);
  if (typeof o.batchId !== 'string' || !isValidBatchId(o.batchId))
    throw new PermanentError('pointer has an invalid batchId');
  if (typeof o.chunk !== 'number' || !Number.isInteger(o.chunk) || o.chunk < 0)
    throw new PermanentError('pointer has an invalid chunk');
  if (typeof o.count !== 'number' || !Number.isInteger(o.count) || o.count < 1)
    throw new PermanentError('pointer has an invalid count');
  return o;
}

export function parseWorkPointer(text: string): WorkPointer {
  const o = parseCommon(text, FORMATS.workPointer);
  const p = o as unknown as WorkPointer;
  // The blob name is derived, not trusted: a pointer cannot make us read another batch's blob.
  if (p.blob !== layout.chunk(p.batchId, p.chunk).name)
    throw new PermanentError('pointer blob does not match its batch and chunk');
  if (typeof p.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(p.sha256))
    throw new PermanentError('pointer has an invalid sha256');
  if ((p.sole as unknown) !== true) delete p.sole;
  return p;
}

export function parseResultPointer(text: string): ResultPointer {
  const o = parseCommon(text, FORMATS.resultPointer);
  const p = o as unknown as ResultPointer;
  if (p.blob !== layout.result(p.batchId, p.chunk).name)
    throw new PermanentError('pointer blob does not match its batch and chunk');
  // Times are informational: a pointer with odd ones is still a good pointer, without them.
  const time = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;
  if (!time(p.billedAt) || !time(p.mapMs)) {
    delete p.billedAt;
    delete p.mapMs;
  }
  return p;
}
