/** The per-record rules of ingest: one record's problems, or its canonical line. */
import type { ErrorDetail } from '../errors';
import { canonicalLine, parseCanonical } from '../model/canonical';
import { isValidTransaction, validateTransaction } from '../model/transaction';
import { duplicateKeys } from './duplicate-keys';
import { parseRecord, type RecordItem } from './records';

/**
 * More fields than this and a record is not a transaction (it has 7): it gets one problem, not
 * one per unknown or repeated field. Keeps a record's work linear in its size: 256 MB of
 * 64 KiB records of repeated keys took 47 s of CPU with a problem per field.
 */
export const MAX_RECORD_FIELDS = 32;

/**
 * One record (read as text, or parsed): its problems, or its canonical line and id. A record
 * already in the canonical layout is read by position and needs no JSON.parse (see
 * parseCanonical); it cannot repeat a key. Any other record is parsed, and scanned for keys
 * it repeats (JSON.parse keeps the last one silently).
 */
export function checkRecord(rec: RecordItem): { line: string; id: string } | { errors: ErrorDetail[] } {
  if (rec.value === undefined && rec.text !== undefined) {
    const fast = parseCanonical(rec.text);
    if (fast && isValidTransaction(fast)) return { line: rec.text, id: fast.id };
  }
  const parsed = parseRecord(rec);
  if (parsed.error !== undefined) return { errors: [{ line: rec.line, field: '', message: parsed.error }] };
  const isObject = typeof parsed.value === 'object' && parsed.value !== null && !Array.isArray(parsed.value);
  const fields = isObject ? Object.keys(parsed.value as object).length : 0;
  if (fields > MAX_RECORD_FIELDS) return { errors: [{ line: rec.line, field: '', message: `too many fields: ${fields} (a transaction has at most 7)` }] };
  const r = validateTransaction(parsed.value, rec.line);
  const line = 'ok' in r ? canonicalLine(r.ok) : undefined;
  const repeated = isObject && rec.text !== undefined && line !== rec.text ? duplicateKeys(rec.text) : [];
  const errors = repeated.map((field) => ({ line: rec.line, field, message: 'duplicate key: the field appears more than once in the record' }));
  if ('errors' in r) return { errors: [...errors, ...r.errors] };
  if (errors.length > 0 || line === undefined) return { errors };
  return { line, id: r.ok.id };
}
