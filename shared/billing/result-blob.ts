/**
 * A chunk result, `results/{batchId}/{chunk}`: gzip NDJSON whose first line is a header with the
 * per-(account, currency) partial sums. The reduce step needs only the header, so it stops
 * inflating there. Version 3 (written now) is that header alone, its sums as compact rows, and
 * the chunk's inputs: its own control sums (control-totals.ts), counted from the chunk blob it
 * billed, which the finalizer adds up against the batch's. Version 2 was the same without the
 * inputs (so a version 3 header says `"min":2`: a reader of version 2 reads it, without the
 * inputs check); version 1 had object rows and one billing line per transaction after the header, which
 * nothing read. All three are read; a result without inputs leaves its batch's inputs check out
 * (control-check.ts).
 */
import { promisify } from 'node:util';
import { constants, createGunzip, gzip } from 'node:zlib';

import { PermanentError } from '../errors';
import { compactSum, type ControlSum, sumOf } from '../model/control-totals';
import { FORMATS, readableVersion } from '../model/format-version';
import type { ChunkBill, ReportRow } from './bill';

const gzipAsync = promisify(gzip);

export interface ResultHeader {
  v: 1 | 2 | 3;
  batchId: string;
  chunk: number;
  count: number;
  partials: ReportRow[];
  /** The chunk's control sums (version 3); absent in a version 1 or 2 header. */
  inputs?: ControlSum[];
}

/**
 * A row of a version-2 header: `[account, currency, transactions, charges, refunds, tax]`. Net
 * and total are not stored: they are charges − refunds and net + tax, exactly (integers).
 */
type CompactRow = [string, string, number, number, number, number];

interface StoredHeader {
  v: unknown;
  batchId: string;
  chunk: number;
  count: number;
  partials?: unknown;
  rows?: unknown;
  inputs?: unknown;
}

export interface EncodedResult {
  body: Buffer;
  /** The header line as written (the finalizer may take it from memory: see RecentResults). */
  headerText: string;
}

/**
 * Deterministic bytes for a given chunk, so a redelivery overwrites with identical content.
 * Fastest gzip level: these blobs are written once and read back once. One JSON.stringify of
 * the whole header: its native serializer is about twice as fast as building the rows'
 * text by template and join (measured on a chunk's 4,000 rows), and it escapes what needs it.
 */
export async function encodeResult(
  batchId: string,
  chunk: number,
  bill: ChunkBill,
  inputs: readonly ControlSum[],
): Promise<EncodedResult> {
  const rows = new Array<CompactRow>(bill.partials.length);
  for (let i = 0; i < rows.length; i++) {
    const r = bill.partials[i] as ReportRow;
    rows[i] = [r.account, r.currency, r.transactions, r.charges, r.refunds, r.tax];
  }
  // Key order is the format: v and min first, so a reader can tell the version before the rest.
  const headerText = JSON.stringify({
    v: 3,
    min: 2,
    batchId,
    chunk,
    count: bill.count,
    rows,
    inputs: inputs.map(compactSum),
  });
  const body = await gzipAsync(Buffer.from(`${headerText}\n`, 'utf8'), { level: constants.Z_BEST_SPEED });
  return { body, headerText };
}

const isCount = (v: unknown): v is number => Number.isSafeInteger(v);

function rowOf(r: unknown): ReportRow {
  if (!Array.isArray(r) || r.length !== 6) throw new Error('bad row');
  const [account, currency, transactions, charges, refunds, tax] = r as CompactRow;
  if (typeof account !== 'string' || typeof currency !== 'string') throw new Error('bad row');
  if (!isCount(transactions) || !isCount(charges) || !isCount(refunds) || !isCount(tax)) throw new Error('bad row');
  const net = charges - refunds;
  return { account, currency, transactions, charges, refunds, net, tax, total: net + tax };
}

export function parseResultHeader(text: string): ResultHeader {
  let h: StoredHeader;
  try {
    h = JSON.parse(text) as StoredHeader;
    if (typeof h !== 'object' || h === null) throw new Error('not an object');
  } catch (e) {
    throw new PermanentError('result blob header is malformed', { cause: e });
  }
  // A newer header than this build reads escapes as NewerFormatError: its result pointer is handed back.
  const v = readableVersion(FORMATS.resultHeader, h as unknown as Record<string, unknown>);
  try {
    if (v === 1 && Array.isArray(h.partials))
      return { v: 1, batchId: h.batchId, chunk: h.chunk, count: h.count, partials: h.partials as ReportRow[] };
    if ((v !== 2 && v !== 3) || !Array.isArray(h.rows)) throw new Error('bad header');
    const header: ResultHeader = {
      v: v,
      batchId: h.batchId,
      chunk: h.chunk,
      count: h.count,
      partials: h.rows.map(rowOf),
    };
    if (v === 2) return header;
    // A version-3 header without its inputs is damaged, not old: it must not skip the check.
    if (!Array.isArray(h.inputs)) throw new Error('bad header');
    return { ...header, inputs: h.inputs.map(sumOf) };
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
