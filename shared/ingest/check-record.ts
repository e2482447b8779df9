/**
 * The per-record rules of ingest: one record's problems, or its canonical line and id. Every
 * record of a body is parsed and checked here, once.
 */
import type { ErrorDetail } from '../errors';
import { canonicalLine, parseCanonical } from '../model/canonical-line';
import type { Transaction } from '../model/transaction';
import { isValidTransaction, validateTransaction } from '../model/validate-transaction';
import { duplicateKeys } from './duplicate-keys';
import type { RecordText } from './record-item';

/**
 * More fields than this and a record is not a transaction (it has 7): it gets one problem, not
 * one per unknown or repeated field. Keeps a record's work linear in its size: 256 MB of
 * 64 KiB records of repeated keys would cost ~47 s of CPU with a problem per field.
 */
const MAX_RECORD_FIELDS = 32;

/** A valid record: its canonical line, and the transaction (its id for the duplicate rule, its amount for the control totals). */
export type CheckedRecord = { canonical: string; transaction: Transaction } | { errors: ErrorDetail[] };

/**
 * A record already in the canonical layout is read by position and needs no JSON.parse (see
 * parseCanonical); it cannot repeat a key. Any other record is parsed, and scanned for keys
 * it repeats (JSON.parse keeps the last one silently).
 */
export function checkRecord(rec: RecordText): CheckedRecord {
  const fast = parseCanonical(rec.text);
  if (fast && isValidTransaction(fast)) return { canonical: rec.text, transaction: fast };
  let value: unknown;
  try {
    value = JSON.parse(rec.text);
  } catch (e) {
    return { errors: [{ line: rec.line, field: '', message: `malformed JSON: ${(e as Error).message}` }] };
  }
  const isObject = typeof value === 'object' && value !== null && !Array.isArray(value);
  const fields = isObject ? Object.keys(value as object).length : 0;
  if (fields > MAX_RECORD_FIELDS)
    return {
      errors: [{ line: rec.line, field: '', message: `too many fields: ${fields} (a transaction has at most 7)` }],
    };
  const r = validateTransaction(value, rec.line);
  const canonical = 'ok' in r ? canonicalLine(r.ok) : undefined;
  const repeated = isObject && canonical !== rec.text ? duplicateKeys(rec.text) : [];
  const errors = repeated.map((field) => ({
    line: rec.line,
    field,
    message: 'duplicate key: the field appears more than once in the record',
  }));
  if ('errors' in r) return { errors: [...errors, ...r.errors] };
  if (errors.length > 0 || canonical === undefined) return { errors };
  return { canonical, transaction: r.ok };
}
