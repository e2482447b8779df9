/**
 * The validation pass of ingest: read the whole body, check every record once, write nothing.
 * With `chunking`, each valid record's canonical line also goes into chunk blobs kept in memory
 * (ChunkKeeper), so a valid body needs no second pass. Collects at most MAX_DETAILS problems
 * but counts them all. A body read once (a request's stream) must keep its pieces, problems or
 * not: they are the only second look the duplicate-id rule has.
 */
import { type ErrorDetail, ValidationError } from '../errors';
import type { EncodedChunk } from '../model/chunk-codec';
import { type ControlSum, ControlTally } from '../model/control-totals';
import { MAX_TRANSACTIONS } from '../model/transaction';
import { type BodySource, hashing } from './body';
import { checkRecord } from './check-record';
import { ChunkKeeper } from './chunk-keeper';
import { DuplicateIds, idsInBody, idsInPieces } from './duplicate-ids';
import { tooLarge } from './ingest-errors';
import { type BodyFormat, readRecordBatches } from './records';

const MAX_DETAILS = 100;

export interface BodySummary {
  transactions: number;
  /** sha256 of the (inflated) body: an Idempotency-Key replay must carry the same body. */
  sha256: string;
  /** The control totals of the records (control-totals.ts), counted in the same pass. */
  controls: ControlSum[];
  /** The longest canonical line, in characters (the chunk size rule's memory bound). */
  longestLine: number;
  /** The chunk pieces, when asked for and they fit the bound; otherwise ingest cuts them itself. */
  chunks?: EncodedChunk[];
}

export interface Chunking {
  /** Transactions per piece (chunks are runs of pieces, see chunk-size.ts). */
  size: number;
  /** Compressed bytes kept at most. */
  maxBytes: number;
}

/** The first `max` of two line-ordered lists, merged by line (a line never appears in both). */
function mergeByLine(a: readonly ErrorDetail[], b: readonly ErrorDetail[], max: number): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  let i = 0;
  let j = 0;
  while (out.length < max && (i < a.length || j < b.length)) {
    if (j >= b.length || (i < a.length && (a[i] as ErrorDetail).line <= (b[j] as ErrorDetail).line))
      out.push(a[i++] as ErrorDetail);
    else out.push(b[j++] as ErrorDetail);
  }
  return out;
}

/** A body read once whose pieces passed the bound: there is no second pass to cut them from. */
function keptPast(maxBytes: number): Error {
  return tooLarge(
    `the batch's chunks pass ${maxBytes} bytes compressed, more than one ingest keeps in memory: send it as smaller batches`,
  );
}

export async function validateBody(open: BodySource, format: BodyFormat, chunking?: Chunking): Promise<BodySummary> {
  if (open.once && !chunking) throw new Error('a body read once is validated with its pieces kept (chunking)');
  // Problems other than duplicate ids, in line order; duplicates are confirmed after the pass.
  const details: ErrorDetail[] = [];
  let problems = 0;
  let count = 0;
  let valid = 0;
  let longestLine = 0;
  let limit: ErrorDetail | undefined;
  const keeper = chunking ? new ChunkKeeper(chunking.size, chunking.maxBytes) : undefined;
  const add = (d: ErrorDetail): void => {
    problems++;
    // Nothing of an invalid batch is written; its pieces are kept only where nothing else can be read again.
    if (!open.once) keeper?.drop();
    if (details.length < MAX_DETAILS) details.push(d);
  };
  // The one structure that grows with the batch (bounded by MAX_TRANSACTIONS).
  const ids = new DuplicateIds();
  const tally = new ControlTally();
  const { stream, digest } = hashing(open());
  read: for await (const batch of readRecordBatches(stream, format)) {
    for (const rec of batch) {
      // Every record counts against the limit, valid or not, and the limit detail is always
      // shown: it tells the client to split the batch, whatever else is wrong with it.
      if (count === MAX_TRANSACTIONS) {
        problems++;
        limit = { line: rec.line, field: '', message: `a batch holds at most ${MAX_TRANSACTIONS} transactions` };
        break read;
      }
      count++;
      if (rec.error !== undefined) {
        add({ line: rec.line, field: '', message: rec.error });
        if (rec.fatal) break read;
        continue;
      }
      const r = checkRecord(rec);
      if ('errors' in r) {
        for (const d of r.errors) add(d);
        continue;
      }
      const t = r.transaction;
      ids.add(t.id, rec.line, valid++);
      tally.add(t.currency, t.type, t.amount);
      if (r.canonical.length > longestLine) longestLine = r.canonical.length;
      const wait = keeper?.add(r.canonical);
      if (wait) await wait;
      if (open.once && keeper?.overflowed) throw keptPast(chunking?.maxBytes ?? 0);
    }
  }
  // A body read once is read again from its pieces: they are finished first.
  const pieces = open.once ? await keeper?.finish() : undefined;
  if (open.once && !pieces && valid > 0) throw keptPast(chunking?.maxBytes ?? 0);
  const duplicates = await ids.confirm(pieces ? idsInPieces(pieces, chunking?.size ?? 0) : idsInBody(open, format));
  problems += duplicates.length;
  const shownDetails = mergeByLine(details, duplicates, MAX_DETAILS);
  if (limit) shownDetails.splice(MAX_DETAILS - 1, Infinity, limit);
  // A problem of the whole body has no line (`line` is 1-based): it is the message, with no detail.
  if (problems === 0 && count === 0)
    throw new ValidationError('the batch is empty: it must hold 1 to 1000000 transactions', { code: 'invalid_batch' });
  if (problems > 0) {
    const shown = problems > shownDetails.length ? ` (first ${shownDetails.length} shown)` : '';
    throw new ValidationError(`the batch has ${problems} problem${problems === 1 ? '' : 's'}${shown}`, {
      code: 'invalid_batch',
      details: shownDetails,
    });
  }
  const chunks = pieces ?? (await keeper?.finish());
  return {
    transactions: count,
    sha256: digest(),
    controls: tally.sums(),
    longestLine,
    ...(chunks ? { chunks } : {}),
  };
}
