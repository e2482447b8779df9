/**
 * Pass one of ingest: read the whole body, validate every record, write nothing.
 * Collects at most MAX_DETAILS problems but counts them all.
 */
import { type ErrorDetail, ValidationError } from '../errors';
import { MAX_TRANSACTIONS, validateTransaction } from '../model/transaction';
import { type BodySource, hashing } from './body';
import { type BodyFormat, readRecords } from './records';

export const MAX_DETAILS = 100;

export interface BodySummary {
  transactions: number;
  /** sha256 of the (inflated) body: an Idempotency-Key replay must carry the same body. */
  sha256: string;
}

export async function validateBody(open: BodySource, format: BodyFormat): Promise<BodySummary> {
  const details: ErrorDetail[] = [];
  let problems = 0;
  let count = 0;
  const add = (d: ErrorDetail): void => {
    problems++;
    if (details.length < MAX_DETAILS) details.push(d);
  };
  // Ids seen so far, with their line, for the uniqueness rule. This set is the one
  // structure that grows with the batch (bounded by MAX_TRANSACTIONS).
  const seen = new Map<string, number>();
  const { stream, digest } = hashing(open());
  for await (const rec of readRecords(stream, format)) {
    // Every record counts against the limit, valid or not, and the limit detail is always
    // shown: it tells the client to split the batch, whatever else is wrong with it.
    if (count === MAX_TRANSACTIONS) {
      problems++;
      details.splice(MAX_DETAILS - 1, Infinity, { line: rec.line, field: '', message: `a batch holds at most ${MAX_TRANSACTIONS} transactions` });
      break;
    }
    count++;
    if (rec.error !== undefined) {
      add({ line: rec.line, field: '', message: rec.error });
      if (rec.fatal) break;
      continue;
    }
    const r = validateTransaction(rec.value, rec.line);
    if ('errors' in r) {
      for (const d of r.errors) add(d);
      continue;
    }
    const firstLine = seen.get(r.ok.id);
    if (firstLine !== undefined) add({ line: rec.line, field: 'id', message: `duplicate id (first seen at line ${firstLine})` });
    else seen.set(r.ok.id, rec.line);
  }
  if (problems === 0 && count === 0) add({ line: 0, field: '', message: 'the batch is empty: it must hold 1 to 1000000 transactions' });
  if (problems > 0) {
    const shown = problems > details.length ? ` (first ${details.length} shown)` : '';
    throw new ValidationError(`the batch has ${problems} problem${problems === 1 ? '' : 's'}${shown}`, 400, 'invalid_batch', details);
  }
  return { transactions: count, sha256: digest() };
}
