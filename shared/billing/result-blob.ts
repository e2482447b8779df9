/**
 * A chunk result, `results/{batchId}/{chunk}`: gzip NDJSON whose first line is a header
 * with the per-(account, currency) partial sums, followed by one billing line per
 * transaction. The reduce step needs only the header, so it stops inflating there.
 */
import { promisify } from 'node:util';
import { createGunzip, gzip } from 'node:zlib';

import { PermanentError } from '../errors';
import type { BillingLine, ChunkBill, ReportRow } from './bill';

const gzipAsync = promisify(gzip);

export interface ResultHeader {
  v: 1;
  batchId: string;
  chunk: number;
  count: number;
  partials: ReportRow[];
}

/** Deterministic bytes for a given chunk, so a redelivery overwrites with identical content. */
export async function encodeResult(batchId: string, chunk: number, bill: ChunkBill): Promise<Buffer> {
  const header: ResultHeader = { v: 1, batchId, chunk, count: bill.lines.length, partials: bill.partials };
  const parts = [JSON.stringify(header), ...bill.lines.map((l: BillingLine) => JSON.stringify(l))];
  return gzipAsync(Buffer.from(parts.join('\n') + '\n', 'utf8'));
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
  try {
    const h = JSON.parse(text) as ResultHeader;
    if (h.v !== 1 || !Array.isArray(h.partials)) throw new Error('bad header');
    return h;
  } catch (e) {
    throw new PermanentError('result blob header is malformed', { cause: e });
  }
}
