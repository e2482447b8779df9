/**
 * A record of a body that has already validated, read again without the rules: a second pass
 * over bytes whose sha256 it checks, or the few lines the duplicate-id rule needs. The rules
 * ran once, in check-record.ts; here a record only has to read as a transaction again.
 */
import { canonicalLine, parseCanonical } from '../model/canonical-line';
import type { Transaction } from '../model/transaction';
import { toTransaction } from '../model/validate-transaction';
import { bodyChanged } from './ingest-errors';
import type { RecordItem } from './record-item';

export interface RereadRecord {
  transaction: Transaction;
  /** What check-record.ts produced for it: the text itself when it was canonical already. */
  canonical: string;
}

export function rereadRecord(rec: RecordItem): RereadRecord {
  if (rec.error !== undefined) throw bodyChanged(`line ${rec.line} no longer reads`);
  const fast = parseCanonical(rec.text);
  if (fast) return { transaction: fast, canonical: rec.text };
  let value: unknown;
  try {
    value = JSON.parse(rec.text);
  } catch {
    throw bodyChanged(`line ${rec.line} is no longer JSON`);
  }
  if (typeof value !== 'object' || value === null || typeof (value as { id?: unknown }).id !== 'string') {
    throw bodyChanged(`line ${rec.line} is no longer a transaction`);
  }
  const transaction = toTransaction(value as Record<string, unknown>);
  return { transaction, canonical: canonicalLine(transaction) };
}
