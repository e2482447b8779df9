/**
 * A chunk result, `results/{batchId}/{chunk}`: gzip NDJSON whose first line is a header
 * with the per-(account, currency) partial sums, followed by one billing line per
 * transaction. The reduce step needs only the header, so it stops inflating there.
 */
import { promisify } from 'node:util';
import { constants, createGunzip, gzip } from 'node:zlib';

import { PermanentError } from '../errors';
import type { ChunkBill, ReportRow } from './bill';

const gzipAsync = promisify(gzip);
/** A result (~50 KB compressed) comes out in one or two steps, not zlib's 16 KiB ones. */
const DEFLATE_CHUNK = 64 * 1024;

export interface ResultHeader {
  v: 1;
  batchId: string;
  chunk: number;
  count: number;
  partials: ReportRow[];
}

export interface EncodedResult {
  body: Buffer;
  /** The header line as written (the finalizer may take it from memory: see RecentResults). */
  headerText: string;
}

/**
 * Deterministic bytes for a given chunk, so a redelivery overwrites with identical content.
 * Fastest gzip level: these blobs are written once and read back only up to the header.
 */
export async function encodeResult(batchId: string, chunk: number, bill: ChunkBill): Promise<EncodedResult> {
  const header: ResultHeader = { v: 1, batchId, chunk, count: bill.lines.length, partials: bill.partials };
  const headerText = JSON.stringify(header);
  // Header, lines, and an empty part for the trailing newline: join() makes one flat string.
  const text = [headerText, ...bill.lines, ''].join('\n');
  const body = await gzipAsync(Buffer.from(text, 'utf8'), { level: constants.Z_BEST_SPEED, chunkSize: DEFLATE_CHUNK });
  return { body, headerText };
}

export function parseResultHeader(text: string): ResultHeader {
  try {
    const h = JSON.parse(text) as ResultHeader;
    if (h.v !== 1 || !Array.isArray(h.partials)) throw new Error('bad header');
    return h;
  } catch (e) {
    throw new PermanentError('result blob header is malformed', { cause: e });
  }
}

export async function readResultHeader(body: Buffer): Promise<ResultHeader> {
  const gz = createGunzip();
  gz.end(body);
  let text = '';
  try {
    for await (const part of gz as AsyncIterable<Buffer>) {
      text += part.toString('utf8');
      const nl = text.indexOf('\n');
      if (nl >= 0) {
        text = text.slice(0, nl);
        break;
      }
    }
  } catch (e) {
    throw new PermanentError('result blob is not valid gzip', { cause: e });
  } finally {
    gz.destroy();
  }
  return parseResultHeader(text);
}
