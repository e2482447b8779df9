/**
 * A chunk result, `results/{batchId}/{chunk}`: gzip NDJSON whose first line is a header
 * with the per-(account, currency) partial sums, followed by one billing line per
 * transaction. The reduce step needs only the header, so it stops inflating there.
 */
import { promisify } from 'node:util';
import { constants, createGunzip, gzip } from 'node:zlib';

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

export interface EncodedResult {
  body: Buffer;
  /** The header line as written (the finalizer may take it from memory: see RecentResults). */
  headerText: string;
}

/**
 * The line JSON.stringify gives, built directly: every string here passed the transaction
 * schema (ids and accounts `[A-Za-z0-9._:-]`, currency `[A-Z]{3}`), so none needs escaping.
 */
function billingLine(l: BillingLine): string {
  return `{"id":"${l.id}","account":"${l.account}","currency":"${l.currency}","type":"${l.type}","net":${l.net},"tax":${l.tax},"total":${l.total}}`;
}

/**
 * Deterministic bytes for a given chunk, so a redelivery overwrites with identical content.
 * Fastest gzip level: these blobs are written once and read back only up to the header.
 */
export async function encodeResult(batchId: string, chunk: number, bill: ChunkBill): Promise<EncodedResult> {
  const header: ResultHeader = { v: 1, batchId, chunk, count: bill.lines.length, partials: bill.partials };
  const headerText = JSON.stringify(header);
  const parts = new Array<string>(bill.lines.length + 2);
  parts[0] = headerText;
  for (let i = 0; i < bill.lines.length; i++) parts[i + 1] = billingLine(bill.lines[i] as BillingLine);
  // The final empty part gives the trailing newline; join() makes one flat string.
  parts[parts.length - 1] = '';
  const body = await gzipAsync(Buffer.from(parts.join('\n'), 'utf8'), { level: constants.Z_BEST_SPEED });
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

/**
 * Result headers this process wrote lately, so that finalizing a batch drained here reads
 * them from memory instead of Storage (one blob read per chunk saved). Sound because a
 * result blob is a function of its chunk's bytes: redeliveries and take-overs write the same
 * header. Bounded by characters held; the oldest go first, and a miss simply reads the blob.
 */
export class RecentResults {
  private readonly headers = new Map<string, string>();
  private chars = 0;

  /** @param maxChars UTF-16 code units held at most (the default, 4 Mi, is ~8 MB). */
  constructor(private readonly maxChars = 4 * 1024 * 1024) {}

  put(batchId: string, chunk: number, headerText: string): void {
    if (headerText.length > this.maxChars) return;
    const key = `${batchId}/${chunk}`;
    this.drop(key);
    this.headers.set(key, headerText);
    this.chars += headerText.length;
    for (const [k] of this.headers) {
      if (this.chars <= this.maxChars) break;
      this.drop(k);
    }
  }

  /** The header text of that chunk if held (and forgets it: a batch is finalized once). */
  take(batchId: string, chunk: number): string | undefined {
    const key = `${batchId}/${chunk}`;
    const text = this.headers.get(key);
    this.drop(key);
    return text;
  }

  private drop(key: string): void {
    const text = this.headers.get(key);
    if (text === undefined) return;
    this.headers.delete(key);
    this.chars -= text.length;
  }
}
